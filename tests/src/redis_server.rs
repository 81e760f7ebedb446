//! A real `redis-server` for a test: started on a free port with persistence off, stopped when
//! dropped. Debian's package, which `.ci/run` installs.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `redis-server`.
#[derive(Debug)]
pub struct RedisServer {
    port: u16,
    child: Child,
}

impl RedisServer {
    /// Start one on a free port of 127.0.0.1, with no snapshot and no append-only file, and
    /// wait until it answers `PING`.
    ///
    /// # Panics
    ///
    /// If `redis-server` is not installed (`apt-get install -y redis-server`, as `.ci/run`
    /// does), or does not answer within 10 s.
    pub fn start() -> RedisServer {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let child = spawn(port);
        let server = RedisServer { port, child };
        let deadline = Instant::now() + Duration::from_secs(10);
        // backoff-lint: allow(a test waiting for the server it started to listen, bounded)
        while !server.answers() {
            assert!(
                Instant::now() < deadline,
                "redis-server did not answer within 10 s"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        server
    }

    /// Its URL.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Whether it answers `PING` now.
    pub fn answers(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
        let mut reply = [0_u8; 7];
        stream.write_all(b"PING\r\n").is_ok()
            && stream.read_exact(&mut reply).is_ok()
            && &reply == b"+PONG\r\n"
    }
}

impl RedisServer {
    /// Kill it, as a crash would.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Start it again on the same port, empty (persistence is off), once it was killed.
    pub fn restart(&mut self) {
        self.kill();
        self.child = spawn(self.port);
        let deadline = Instant::now() + Duration::from_secs(10);
        // backoff-lint: allow(a test waiting for the server it started to listen, bounded)
        while !self.answers() {
            assert!(
                Instant::now() < deadline,
                "redis-server did not answer within 10 s"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Send one command (`["CLIENT", "PAUSE", "3000"]`) and read the first line of its reply.
    pub fn command(&self, args: &[&str]) -> String {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).expect("redis answers");
        let mut request = format!("*{}\r\n", args.len());
        for arg in args {
            request.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
        }
        stream
            .write_all(request.as_bytes())
            .expect("a command sent");
        let mut reply = [0_u8; 64];
        let read = stream.read(&mut reply).expect("a reply");
        String::from_utf8_lossy(&reply[..read]).trim().to_owned()
    }
}

impl RedisServer {
    /// `INFO commandstats`: each command the server ran since its last `CONFIG RESETSTAT`, by
    /// name, with how many times.
    pub fn info_commandstats(&self) -> Vec<(String, u64)> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).expect("redis answers");
        stream
            .write_all(b"*2\r\n$4\r\nINFO\r\n$12\r\ncommandstats\r\n")
            .expect("a command sent");
        let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
        let mut text = String::new();
        let mut buffer = [0_u8; 4096];
        // One reply: read until its blank end (a bulk string ending in CRLF).
        while let Ok(read) = stream.read(&mut buffer) {
            text.push_str(&String::from_utf8_lossy(&buffer[..read]));
            if read == 0
                || text.ends_with("\r\n\r\n")
                || text.matches("\r\n").count() > 2 && read < buffer.len()
            {
                break;
            }
        }
        text.lines()
            .filter_map(|line| line.strip_prefix("cmdstat_"))
            .filter_map(|line| {
                let (name, rest) = line.split_once(':')?;
                let calls = rest
                    .strip_prefix("calls=")?
                    .split(',')
                    .next()?
                    .parse()
                    .ok()?;
                Some((name.to_owned(), calls))
            })
            .collect()
    }
}

/// `redis-server` on `port` of 127.0.0.1, persistence off.
fn spawn(port: u16) -> Child {
    Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .spawn()
        .expect(
            "redis-server runs: install it with `apt-get install -y redis-server`, as .ci/run does",
        )
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
