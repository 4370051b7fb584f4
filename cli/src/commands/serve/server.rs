//! The console's own server, what `planlock serve` runs: connections accepted on a listener, at
//! most [`MAX_CONNECTIONS`] at once and [`MAX_PER_CLIENT`] of one address, each closed when its
//! client stops reading or sending. Each request goes to the library's [`Console`] (a tower
//! `Service`) with its client's address, by which failed sign-ins are counted.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::Request;
use planlock::console::{ClientAddr, Console};
use tower_service::Service as _;

/// The most connections held at once.
pub const MAX_CONNECTIONS: usize = 64;
/// The most connections one client address may hold at once: one client cannot take every slot.
pub const MAX_PER_CLIENT: usize = 16;
/// The most bytes of a request's headers.
const MAX_HEADERS: usize = 16 << 10;
/// How long a client has to send a request's headers.
const HEADER_TIME: Duration = Duration::from_secs(10);
/// How long a write may wait for a client that does not read (pipelined requests never read
/// hold a connection and its response in memory): then the connection is closed.
const WRITE_TIME: Duration = Duration::from_secs(10);
/// How long a read may wait on an idle kept-alive connection. Longer than an event stream's
/// keep-alive: a stream's connection is read while it writes.
const IDLE_TIME: Duration = Duration::from_secs(60);
/// The kernel's send buffer of a connection: what a client that does not read can leave
/// waiting there (64 connections: 4 MiB at most, not the hundreds the autotuned default allows).
const SEND_BUFFER: usize = 64 << 10;

/// A client address's share of the connections; given back when dropped.
struct ClientSlot {
    clients: Arc<Mutex<HashMap<IpAddr, usize>>>,
    ip: IpAddr,
}

impl ClientSlot {
    /// A slot for `ip`, unless it holds [`MAX_PER_CLIENT`] already.
    fn take(clients: &Arc<Mutex<HashMap<IpAddr, usize>>>, ip: IpAddr) -> Option<ClientSlot> {
        let mut held = clients.lock().unwrap_or_else(|p| p.into_inner());
        let count = held.entry(ip).or_insert(0);
        if *count >= MAX_PER_CLIENT {
            return None;
        }
        *count += 1;
        Some(ClientSlot { clients: clients.clone(), ip })
    }
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let mut held = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = held.get_mut(&self.ip) {
            *count -= 1;
            if *count == 0 {
                held.remove(&self.ip);
            }
        }
    }
}

/// Serves `console` on `listener` until the process is stopped: at most [`MAX_CONNECTIONS`] at
/// once, at most [`MAX_PER_CLIENT`] of one address; a connection whose client stops reading or
/// sending is closed ([`WRITE_TIME`], [`IDLE_TIME`]). Runs on planlock's I/O runtime.
pub async fn accept(listener: tokio::net::TcpListener, console: Console) {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let clients = Arc::new(Mutex::new(HashMap::new()));
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else { return };
        let Ok((stream, peer)) = listener.accept().await else { continue };
        // Closed at once: the slot goes back for another client.
        let Some(client) = ClientSlot::take(&clients, peer.ip()) else { continue };
        let _ = socket2::SockRef::from(&stream).set_send_buffer_size(SEND_BUFFER);
        let console = console.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |mut req: Request<hyper::body::Incoming>| {
                // Who sends it, for the count of failed sign-ins.
                req.extensions_mut().insert(ClientAddr(peer.ip()));
                console.clone().call(req)
            });
            let mut stream = tokio_io_timeout::TimeoutStream::new(stream);
            stream.set_write_timeout(Some(WRITE_TIME));
            stream.set_read_timeout(Some(IDLE_TIME));
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_TIME)
                .max_buf_size(MAX_HEADERS)
                .serve_connection(hyper_util::rt::TokioIo::new(Box::pin(stream)), service)
                .await;
            drop((slot, client));
        });
    }
}
