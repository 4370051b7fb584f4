//! A local OTLP/HTTP collector that drops what it is sent: it reads each request whole and
//! answers 200 with an empty body (a successful export), so the fleet bench measures what
//! exporting costs a worker without a backend's own work in the figures.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

pub struct Collector {
    pub url: String,
    requests: Arc<AtomicU64>,
    bytes: Arc<AtomicU64>,
}

impl Collector {
    pub fn start() -> Collector {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (requests, bytes) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let (r, b) = (requests.clone(), bytes.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (r, b) = (r.clone(), b.clone());
                std::thread::spawn(move || serve(stream, &r, &b));
            }
        });
        Collector { url, requests, bytes }
    }

    /// Requests and body bytes received so far.
    pub fn received(&self) -> (u64, u64) {
        (self.requests.load(Ordering::Relaxed), self.bytes.load(Ordering::Relaxed))
    }
}

/// Answers the requests of one kept-alive connection until it closes.
fn serve(stream: TcpStream, requests: &AtomicU64, bytes: &AtomicU64) {
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        // The request line and headers, up to the empty line.
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        requests.fetch_add(1, Ordering::Relaxed);
        bytes.fetch_add(length as u64, Ordering::Relaxed);
        let answer = b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
        if writer.write_all(answer).is_err() {
            return;
        }
    }
}
