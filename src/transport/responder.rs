//! The per-process responder thread: it answers barrier release queries from ranks that
//! lost the one release datagram, after this rank (the barrier root) already left, and
//! repair queries for an eager broadcast this rank rooted and left before every receiver
//! acknowledged it (the copy is held here until then). It only
//! touches a UDP socket and the pure `wire::Responder`, never MPI, so it can never race the
//! host MPI's shutdown; it is still stopped at finalize.

use crate::lock::lock;
use crate::net::UnicastSocket;
use crate::wire::{Ctx, Responder};
use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

pub struct ResponderThread {
    addr: SocketAddrV4,
    table: Arc<Mutex<Responder>>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl ResponderThread {
    pub fn start(bind: std::net::Ipv4Addr) -> std::io::Result<ResponderThread> {
        let sock = UnicastSocket::open(bind)?;
        let addr = sock.local_addr();
        let table = Arc::new(Mutex::new(Responder::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (t, s) = (table.clone(), stop.clone());
        let handle = std::thread::Builder::new()
            .name("mpicast-responder".into())
            .spawn(move || serve(sock, t, s))?;
        Ok(ResponderThread {
            addr,
            table,
            stop,
            handle: Some(handle),
        })
    }

    pub fn addr(&self) -> SocketAddrV4 {
        self.addr
    }

    pub fn register(&self, ctx: &Ctx, root: u32) {
        lock(&self.table).register(ctx, root);
    }

    pub fn unregister(&self, comm: u32) {
        lock(&self.table).unregister(comm);
    }

    /// A handle for a channel's root to record releases without holding the session lock.
    pub fn handle(&self) -> ResponderHandle {
        ResponderHandle(self.table.clone())
    }

    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn serve(sock: UnicastSocket, table: Arc<Mutex<Responder>>, stop: Arc<AtomicBool>) {
    let mut buf = vec![0u8; 65536];
    // One buffer per datagram of an answer; the first also takes release answers.
    let mut out: Vec<Vec<u8>> = vec![Vec::new()];
    let fds = [sock.fd()];
    while !stop.load(Ordering::Relaxed) {
        match crate::net::wait_readable(&fds, Duration::from_millis(50)) {
            Ok(r) if r.is_empty() => continue,
            Ok(_) => {}
            Err(_) => continue,
        }
        while let Ok(Some((len, from))) = sock.recv_from(&mut buf) {
            let n = {
                let t = lock(&table);
                if t.answer(&buf[..len], &mut out[0]) {
                    1
                } else {
                    let n = t.answer_repair(&buf[..len], &mut out);
                    crate::stats::add(&crate::stats::COUNTERS.repairs, n as u64);
                    n
                }
            };
            for d in &out[..n] {
                let _ = sock.send_to(d, from);
            }
        }
    }
}

#[derive(Clone)]
pub struct ResponderHandle(Arc<Mutex<Responder>>);

impl ResponderHandle {
    /// Must be called before the release datagram goes out, so a query that races it is
    /// answered.
    pub fn released(&self, comm: u32, seq: u64) {
        lock(&self.0).released(comm, seq);
    }

    /// Keeps a copy of eager broadcast `seq` of `comm` for repair queries; must be called
    /// before its datagrams go out.
    pub fn hold(&self, comm: u32, seq: u64, data: Arc<[u8]>, frag: usize) {
        lock(&self.0).hold(comm, seq, data, frag);
    }

    /// Every receiver acknowledged broadcast `seq` of `comm`.
    pub fn drop_held(&self, comm: u32, seq: u64) {
        lock(&self.0).drop_held(comm, seq);
    }
}
