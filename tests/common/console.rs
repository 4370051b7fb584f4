//! `planlock serve` driven over plain HTTP/1.1, as a browser talks to it (tests/it/console.rs and the
//! PostgreSQL harness).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};

/// The console token the tests start it with.
pub const TOKEN: &str = "console-token-for-the-tests-0123456789";

pub struct Console {
    pub child: Child,
    pub addr: String,
}

impl Drop for Console {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `planlock serve` on `place` (`--sessions DIR` or `--database URL`) with the console token
/// [`TOKEN`], on a free port.
pub fn serve(place: &[&std::ffi::OsStr], extra: &[&str]) -> Console {
    serve_with(place, extra, &[])
}

/// [`serve`] with more environment variables.
pub fn serve_with(place: &[&std::ffi::OsStr], extra: &[&str], env: &[(&str, &str)]) -> Console {
    let mut child = super::cli::planlock()
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(place)
        .args(extra)
        .env("PLANLOCK_CONSOLE_TOKEN", TOKEN)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(!line.contains(TOKEN), "a token from the environment is not printed: {line}");
    let addr = line.split("http://").nth(1).and_then(|r| r.split('/').next()).expect(&line).to_owned();
    Console { child, addr }
}

pub struct Reply {
    pub status: u16,
    pub headers: String,
    pub body: String,
}

impl Console {
    /// One request: `method path` with `headers` and `body`, the connection closed after it.
    pub fn request(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n", self.addr);
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        if !body.is_empty() {
            req.push_str("Content-Type: application/x-www-form-urlencoded\r\n");
        }
        req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
        stream.write_all(req.as_bytes()).unwrap();
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).unwrap();
        let raw = String::from_utf8(raw).unwrap();
        let (head, body) = raw.split_once("\r\n\r\n").unwrap();
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        Reply { status, headers: head.to_lowercase(), body: body.to_owned() }
    }

    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Signs in as `name`: the cookie header to send.
    pub fn sign_in(&self, name: &str) -> String {
        let origin = self.origin();
        let reply = self.request("POST", "/login", &[("Origin", &origin)], &format!("token={TOKEN}&name={name}"));
        assert_eq!(reply.status, 303, "{}", reply.body);
        let cookie = reply.headers.lines().find_map(|l| l.strip_prefix("set-cookie: ")).unwrap();
        assert!(cookie.contains("httponly") && cookie.contains("samesite=strict"), "{cookie}");
        cookie.split(';').next().unwrap().to_owned()
    }

    pub fn get(&self, cookie: &str, path: &str) -> Reply {
        self.request("GET", path, &[("Cookie", cookie)], "")
    }

    /// The page of `session`'s pause, reached from its row in the inbox (where its forms are).
    pub fn pause_page(&self, cookie: &str, session: &str) -> Reply {
        // Found by the inbox's search, whichever page its row is on.
        let q: String = form_urlencoded_byte(session);
        let inbox = self.get(cookie, &format!("/inbox?q={q}&show=all")).body;
        let start = format!("href=\"/inbox/{}/", url_segment(session));
        let at = inbox.find(&start).unwrap_or_else(|| panic!("no row of {session}: {inbox}")) + 6;
        let href = &inbox[at..at + inbox[at..].find('"').unwrap()];
        let href = href.split('?').next().unwrap().to_owned();
        self.get(cookie, &href)
    }

    /// The result an action's answer `reply` returns to, as the page it redirects to shows it
    /// once: `ok: …` or `error: …` (empty when it shows none).
    pub fn flash(&self, cookie: &str, reply: &Reply) -> String {
        let Some(to) = reply.headers.lines().find_map(|l| l.strip_prefix("location: ")) else { return String::new() };
        let page = self.get(cookie, to.split('#').next().unwrap()).body;
        let Some(at) = page.find("<p class=\"flash ") else { return String::new() };
        let flash = &page[at + 16..];
        let kind = &flash[..flash.find('"').unwrap()];
        let text = &flash[flash.find('>').unwrap() + 1..flash.find("</p>").unwrap()];
        format!("{kind}: {text}")
    }
}

/// `text` as a query value.
fn form_urlencoded_byte(text: &str) -> String {
    text.bytes()
        .map(|b| match b.is_ascii_alphanumeric() {
            true => (b as char).to_string(),
            false => format!("%{b:02X}"),
        })
        .collect()
}

/// The rows of an inbox page.
pub fn rows(html: &str) -> usize {
    html.matches(" data-row>").count()
}

/// The value of field `name` of the form that posts to `form_action` (its own action, or a
/// button's `formaction`: the decision form is one form with a button per verdict).
pub fn field<'a>(html: &'a str, form_action: &str, name: &str) -> &'a str {
    let action = html.find(&format!("action=\"{form_action}\"")).expect(form_action);
    let form = &html[html[..action].rfind("<form").expect("a form")..];
    let at = form.find(&format!("name=\"{name}\" value=\"")).unwrap() + name.len() + 15;
    &form[at..at + form[at..].find('"').unwrap()]
}

/// The decide form's fields `csrf`, `digest` and `pause` of `form_action` on `html`, as a form
/// body (to which `&reason=…` is added).
pub fn decide_fields(html: &str, form_action: &str) -> String {
    let value = |name| url_segment(field(html, form_action, name));
    format!("csrf={}&digest={}&pause={}", value("csrf"), value("digest"), value("pause"))
}

/// `text` as one URL path segment: every byte but the unreserved ones percent-encoded.
pub fn url_segment(text: &str) -> String {
    text.bytes()
        .map(|b| match b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            true => (b as char).to_string(),
            false => format!("%{b:02X}"),
        })
        .collect()
}
