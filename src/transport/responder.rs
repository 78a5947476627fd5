//! The per-process responder thread: it answers barrier release queries from ranks that
//! lost the one release datagram, after this rank (the barrier root) already left. It only
//! touches a UDP socket and the pure `wire::Responder`, never MPI, so it can never race the
//! host MPI's shutdown; it is still stopped at finalize.

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
        self.table.lock().unwrap().register(ctx, root);
    }

    pub fn unregister(&self, comm: u32) {
        self.table.lock().unwrap().unregister(comm);
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
    let mut buf = vec![0u8; 2048];
    let mut out = Vec::with_capacity(256);
    let fds = [sock.fd()];
    while !stop.load(Ordering::Relaxed) {
        match crate::net::wait_readable(&fds, Duration::from_millis(50)) {
            Ok(r) if r.is_empty() => continue,
            Ok(_) => {}
            Err(_) => continue,
        }
        while let Ok(Some((len, from))) = sock.recv_from(&mut buf) {
            let answered = table.lock().unwrap().answer(&buf[..len], &mut out);
            if answered {
                let _ = sock.send_to(&out, from);
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
        self.0.lock().unwrap().released(comm, seq);
    }
}
