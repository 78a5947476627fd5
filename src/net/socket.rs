//! The UDP sockets: one multicast socket per communicator (joined to its group) and one unicast
//! socket for point-to-point control datagrams, plus the poll loop that waits on both.
//!
//! Everything is non-blocking. A send that meets a full buffer waits here, bounded by
//! [`SEND_WAIT_LIMIT`]; a receive never waits. What the datagrams mean is `wire/`'s business.

use std::io;
use std::mem::MaybeUninit;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use super::Iface;

/// How long one send may wait for buffer space before it gives up with `TimedOut`. A healthy
/// sender drains in microseconds; a second means the interface is stuck.
pub const SEND_WAIT_LIMIT: Duration = Duration::from_secs(1);

/// Datagrams per sendmmsg call: bounds the on-stack header arrays.
const BATCH: usize = 64;

/// A UDP socket bound to one multicast group and port and joined to it on one interface.
///
/// With loopback on, the socket also receives what it sends itself, as does every other socket
/// on the host joined to the same group and port.
pub struct McastSocket {
    sock: Socket,
    group: SocketAddrV4,
    group_sa: SockAddr,
    rcvbuf: usize,
    sndbuf: usize,
    truncated: AtomicU64,
}

impl McastSocket {
    /// Opens, binds `group:port` (so only that group's traffic arrives), joins on `iface.addr`,
    /// sends out of `iface` with `ttl`, loops back to local sockets, refuses other groups joined on
    /// the same port (`IP_MULTICAST_ALL` = 0), and asks for `rcvbuf` bytes of receive and send
    /// buffer, forcing past `rmem_max` when privileged. Read [`McastSocket::rcvbuf`] for the grant.
    pub fn open(
        iface: &Iface,
        group: Ipv4Addr,
        port: u16,
        ttl: u8,
        rcvbuf: usize,
    ) -> io::Result<McastSocket> {
        if !group.is_multicast() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("mpicast: {group} is not a multicast group"),
            ));
        }
        let ctx = |what: &str, e: io::Error| {
            io::Error::new(
                e.kind(),
                format!(
                    "mpicast: {what} for group {group}:{port} on {} ({}): {e}",
                    iface.name, iface.addr
                ),
            )
        };
        let sock = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))
            .map_err(|e| ctx("socket", e))?;
        sock.set_reuse_address(true)
            .map_err(|e| ctx("SO_REUSEADDR", e))?;
        sock.set_multicast_all_v4(false)
            .map_err(|e| ctx("IP_MULTICAST_ALL", e))?;
        let group_addr = SocketAddrV4::new(group, port);
        sock.bind(&group_addr.into()).map_err(|e| ctx("bind", e))?;
        sock.join_multicast_v4(&group, &iface.addr)
            .map_err(|e| ctx("IP_ADD_MEMBERSHIP", e))?;
        sock.set_multicast_if_v4(&iface.addr)
            .map_err(|e| ctx("IP_MULTICAST_IF", e))?;
        sock.set_multicast_ttl_v4(u32::from(ttl))
            .map_err(|e| ctx("IP_MULTICAST_TTL", e))?;
        sock.set_multicast_loop_v4(true)
            .map_err(|e| ctx("IP_MULTICAST_LOOP", e))?;
        sock.set_nonblocking(true)
            .map_err(|e| ctx("O_NONBLOCK", e))?;
        let rcv = set_buffer(&sock, Buf::Recv, rcvbuf).map_err(|e| ctx("SO_RCVBUF", e))?;
        let snd = set_buffer(&sock, Buf::Send, rcvbuf).map_err(|e| ctx("SO_SNDBUF", e))?;
        // Without IP_RECVERR, Linux reports success for a UDP datagram that the interface's
        // queue discipline dropped (counting it only in SndbufErrors); with it, sendmsg fails
        // with ENOBUFS and the sender backs off instead of overrunning its own link.
        set_recverr(&sock).map_err(|e| ctx("IP_RECVERR", e))?;
        Ok(McastSocket {
            sock,
            group: group_addr,
            group_sa: group_addr.into(),
            rcvbuf: rcv,
            sndbuf: snd,
            truncated: AtomicU64::new(0),
        })
    }

    /// Receive buffer granted, as getsockopt reports it (Linux reports twice the request, the
    /// extra half being its bookkeeping allowance).
    pub fn rcvbuf(&self) -> usize {
        self.rcvbuf
    }

    /// Send buffer granted, as getsockopt reports it.
    pub fn sndbuf(&self) -> usize {
        self.sndbuf
    }

    pub fn group(&self) -> SocketAddrV4 {
        self.group
    }

    /// Sends one datagram to the group, waiting (bounded) while the send buffer or the device
    /// queue is full.
    pub fn send(&self, dgram: &[u8]) -> io::Result<()> {
        send_waiting(&self.sock, || self.sock.send_to(dgram, &self.group_sa)).map(drop)
    }

    /// Sends datagrams to the group with as few sendmmsg calls as possible and returns how many
    /// went out: all of them, or fewer when the kernel stopped part way (the caller resends the
    /// rest). Waits like [`McastSocket::send`] only when not even the first one could be sent.
    pub fn send_batch(&self, dgrams: &[&[u8]]) -> io::Result<usize> {
        self.send_batch_inner(dgrams, true)
    }

    /// [`McastSocket::send_batch`] that never waits: `Ok(0)` when the send buffer or the
    /// device queue takes nothing now (a non-blocking operation retries at its next progress).
    pub fn try_send_batch(&self, dgrams: &[&[u8]]) -> io::Result<usize> {
        self.send_batch_inner(dgrams, false)
    }

    fn send_batch_inner(&self, dgrams: &[&[u8]], wait: bool) -> io::Result<usize> {
        let mut sent = 0;
        while sent < dgrams.len() {
            let chunk = &dgrams[sent..dgrams.len().min(sent + BATCH)];
            let n = if sent == 0 && wait {
                send_waiting(&self.sock, || self.sendmmsg(chunk))?
            } else if sent == 0 {
                loop {
                    match self.sendmmsg(chunk) {
                        Ok(n) => break n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(e) if queue_full(&e) => return Ok(0),
                        Err(e) => return Err(e),
                    }
                }
            } else {
                match self.sendmmsg(chunk) {
                    Ok(n) => n,
                    // Part of the batch is out; report that rather than lose the count.
                    Err(_) => return Ok(sent),
                }
            };
            sent += n;
            if n < chunk.len() {
                break;
            }
        }
        Ok(sent)
    }

    fn sendmmsg(&self, chunk: &[&[u8]]) -> io::Result<usize> {
        debug_assert!(!chunk.is_empty() && chunk.len() <= BATCH);
        // SAFETY: iovec and mmsghdr are plain C structs for which all-zero is a valid value.
        let mut iov: [libc::iovec; BATCH] = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let mut hdr: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
        for (k, d) in chunk.iter().enumerate() {
            // The kernel only reads through iov_base and msg_name on send, so the casts from
            // shared references to the *mut the C types want are sound.
            iov[k].iov_base = d.as_ptr() as *mut libc::c_void;
            iov[k].iov_len = d.len();
            hdr[k].msg_hdr.msg_name = self.group_sa.as_ptr() as *mut libc::c_void;
            hdr[k].msg_hdr.msg_namelen = self.group_sa.len();
            hdr[k].msg_hdr.msg_iov = &mut iov[k];
            hdr[k].msg_hdr.msg_iovlen = 1;
        }
        // SAFETY: the fd is open for the life of self; hdr[..chunk.len()] are initialised and
        // point at iov entries, datagram bytes and a sockaddr that all outlive the call.
        let rc = unsafe {
            libc::sendmmsg(
                self.sock.as_raw_fd(),
                hdr.as_mut_ptr(),
                chunk.len() as libc::c_uint,
                0,
            )
        };
        if rc < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(rc as usize)
        }
    }

    /// Takes one queued datagram into `buf`: `Ok(Some(len))`, or `Ok(None)` when none is queued.
    /// A datagram longer than `buf` is dropped and counted (see [`McastSocket::truncated`]);
    /// it cannot be one of ours, whose size the caller bounds.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        loop {
            let got = match recv_raw(self.sock.as_raw_fd(), buf, None) {
                Ok(got) => got,
                // IP_RECVERR reports a queued error once through recv; it concerns an earlier
                // send (none is expected for multicast), never this datagram: drop it.
                Err(_) if drain_errqueue(self.sock.as_raw_fd()) => continue,
                Err(e) => return Err(e),
            };
            match got {
                None => return Ok(None),
                Some(n) if n > buf.len() => {
                    self.truncated.fetch_add(1, Ordering::Relaxed);
                }
                Some(n) => return Ok(Some(n)),
            }
        }
    }

    /// Has the kernel drop, before they are queued, the datagrams whose byte at offset
    /// `byte.0` is `byte.1` and whose little-endian 32-bit words at the offsets of `words` have
    /// those values (offsets into the UDP payload; a datagram too short to have them is dropped
    /// too). For a sender's own datagrams, which multicast loops back to its socket: reading
    /// them only to throw them away costs a system call and a copy per datagram sent.
    /// Replaces any filter attached before.
    pub fn drop_matching(&self, byte: (u32, u8), words: &[(u32, u32)]) -> io::Result<()> {
        self.sock.attach_filter(&drop_program(byte, words))
    }

    /// Takes up to `batch.slots()` queued datagrams with one system call (recvmmsg) and
    /// returns how many; [`RecvBatch::get`] gives each. 0 when none is queued. A datagram
    /// longer than a slot is dropped and counted, as [`McastSocket::recv`] does.
    pub fn recv_batch(&self, batch: &mut RecvBatch) -> io::Result<usize> {
        batch.n = 0;
        let slots = batch.slots();
        if slots == 0 {
            return Ok(0);
        }
        let cap = batch.cap;
        loop {
            let base = batch.buf.as_mut_ptr();
            let mut iov: Vec<libc::iovec> = (0..slots)
                .map(|i| libc::iovec {
                    // SAFETY: i * cap + cap <= buf.len() (slots = buf.len() / cap): in bounds.
                    iov_base: unsafe { base.add(i * cap) } as *mut libc::c_void,
                    iov_len: cap,
                })
                .collect();
            // SAFETY: an all-zero mmsghdr is valid (null name, no control data).
            let mut hdrs: Vec<libc::mmsghdr> = (0..slots)
                .map(|_| unsafe { std::mem::zeroed::<libc::mmsghdr>() })
                .collect();
            for (h, v) in hdrs.iter_mut().zip(iov.iter_mut()) {
                h.msg_hdr.msg_iov = v;
                h.msg_hdr.msg_iovlen = 1;
            }
            // SAFETY: hdrs holds `slots` headers, each pointing at one iovec of `iov` that
            // describes a disjoint, writable `cap`-byte part of batch.buf; both vectors and the
            // buffer outlive the call, which does not block (MSG_DONTWAIT).
            let rc = unsafe {
                libc::recvmmsg(
                    self.sock.as_raw_fd(),
                    hdrs.as_mut_ptr(),
                    slots as libc::c_uint,
                    libc::MSG_DONTWAIT,
                    std::ptr::null_mut(),
                )
            };
            if rc < 0 {
                let e = io::Error::last_os_error();
                match e.kind() {
                    io::ErrorKind::Interrupted => continue,
                    io::ErrorKind::WouldBlock => return Ok(0),
                    // See `recv`: a queued error of an earlier send, never a datagram.
                    _ if drain_errqueue(self.sock.as_raw_fd()) => continue,
                    _ => return Err(e),
                }
            }
            // Keep the datagrams that fit, in order, packed at the front of the slot list.
            let mut n = 0;
            for (i, h) in hdrs.iter().take(rc as usize).enumerate() {
                if h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0 {
                    self.truncated.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                batch.lens[n] = (i, h.msg_len as usize);
                n += 1;
            }
            batch.n = n;
            if n == 0 && rc > 0 {
                continue; // all of them too long: look again
            }
            return Ok(n);
        }
    }

    /// Datagrams dropped by [`McastSocket::recv`] because they did not fit the buffer.
    pub fn truncated(&self) -> u64 {
        self.truncated.load(Ordering::Relaxed)
    }

    pub fn fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }
}

impl AsFd for McastSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.sock.as_fd()
    }
}

/// A UDP socket bound to one local address on an ephemeral port, for point-to-point control
/// datagrams (barrier release queries and answers).
pub struct UnicastSocket {
    sock: Socket,
    local: SocketAddrV4,
}

impl UnicastSocket {
    /// Binds `addr:0`, non-blocking.
    pub fn open(addr: Ipv4Addr) -> io::Result<UnicastSocket> {
        let ctx = |what: &str, e: io::Error| {
            io::Error::new(e.kind(), format!("mpicast: unicast {what} on {addr}: {e}"))
        };
        let sock = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))
            .map_err(|e| ctx("socket", e))?;
        sock.bind(&SocketAddrV4::new(addr, 0).into())
            .map_err(|e| ctx("bind", e))?;
        sock.set_nonblocking(true)
            .map_err(|e| ctx("O_NONBLOCK", e))?;
        let local = sock
            .local_addr()
            .map_err(|e| ctx("getsockname", e))?
            .as_socket_ipv4()
            .ok_or_else(|| ctx("getsockname", io::Error::other("not an IPv4 address")))?;
        Ok(UnicastSocket { sock, local })
    }

    pub fn local_addr(&self) -> SocketAddrV4 {
        self.local
    }

    /// Sends one datagram, waiting (bounded) while buffers are full.
    pub fn send_to(&self, dgram: &[u8], to: SocketAddrV4) -> io::Result<()> {
        let to: SockAddr = to.into();
        send_waiting(&self.sock, || self.sock.send_to(dgram, &to)).map(drop)
    }

    /// Takes one queued datagram: `Ok(Some((len, sender)))` or `Ok(None)` when none is queued.
    /// Datagrams longer than `buf` are dropped.
    pub fn recv_from(&self, buf: &mut [u8]) -> io::Result<Option<(usize, SocketAddrV4)>> {
        loop {
            let mut from = SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0);
            match recv_raw(self.sock.as_raw_fd(), buf, Some(&mut from))? {
                None => return Ok(None),
                Some(n) if n > buf.len() => continue,
                Some(n) => return Ok(Some((n, from))),
            }
        }
    }

    pub fn fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }
}

impl AsFd for UnicastSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.sock.as_fd()
    }
}

/// Waits until at least one of `fds` is readable (or has an error or hangup pending, which the
/// next receive reports) or `timeout` passes; returns the indices of the ready fds, empty on
/// timeout. Never returns early: an interrupted or short poll is resumed.
pub fn wait_readable(fds: &[RawFd], timeout: Duration) -> io::Result<Vec<usize>> {
    let mut ready = Vec::new();
    wait_readable_into(fds, timeout, &mut ready)?;
    Ok(ready)
}

/// [`wait_readable`] into a caller-owned vector, so a progress loop does not allocate.
/// Up to 8 fds need no allocation at all.
pub fn wait_readable_into(
    fds: &[RawFd],
    timeout: Duration,
    ready: &mut Vec<usize>,
) -> io::Result<()> {
    ready.clear();
    const STACK: usize = 8;
    let blank = libc::pollfd {
        fd: -1,
        events: 0,
        revents: 0,
    };
    let mut on_stack = [blank; STACK];
    let mut on_heap = Vec::new();
    let pfds: &mut [libc::pollfd] = if fds.len() <= STACK {
        &mut on_stack[..fds.len()]
    } else {
        on_heap.resize(fds.len(), blank);
        &mut on_heap
    };
    for (p, &fd) in pfds.iter_mut().zip(fds) {
        p.fd = fd;
        p.events = libc::POLLIN;
    }
    // None: too far away to represent, i.e. wait forever.
    let deadline = Instant::now().checked_add(timeout);
    loop {
        let ms = match deadline {
            None => -1,
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                // Round up so poll never returns before the deadline; cap to what poll takes.
                let ms = left.as_micros().div_ceil(1000);
                ms.min(i32::MAX as u128) as libc::c_int
            }
        };
        // SAFETY: pfds is a valid, initialised slice of pollfd of the given length for the call.
        let rc = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, ms) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if rc == 0 {
            match deadline {
                Some(d) if Instant::now() >= d => return Ok(()),
                _ => continue,
            }
        }
        for (k, p) in pfds.iter().enumerate() {
            if p.revents & libc::POLLNVAL != 0 {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("mpicast: poll: fd {} is not open", p.fd),
                ));
            }
            if p.revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP) != 0 {
                ready.push(k);
            }
        }
        return Ok(());
    }
}

/// The send buffer is full (`EWOULDBLOCK`) or the device queue refused the datagram
/// (`ENOBUFS`, with `IP_RECVERR`): a later send may succeed.
fn queue_full(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock || e.raw_os_error() == Some(libc::ENOBUFS)
}

/// Runs `op` until it succeeds, retrying on EINTR and waiting on EAGAIN (poll for POLLOUT) or
/// ENOBUFS (the device queue is full, which poll cannot see: back off and retry), for at most
/// [`SEND_WAIT_LIMIT`].
fn send_waiting(sock: &Socket, mut op: impl FnMut() -> io::Result<usize>) -> io::Result<usize> {
    let start = Instant::now();
    let mut backoff = Duration::from_micros(20);
    loop {
        let e = match op() {
            Ok(n) => return Ok(n),
            Err(e) => e,
        };
        if e.kind() == io::ErrorKind::Interrupted {
            continue;
        }
        if !queue_full(&e) {
            return Err(e);
        }
        let full = e.kind() == io::ErrorKind::WouldBlock;
        let waited = start.elapsed();
        if waited >= SEND_WAIT_LIMIT {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("mpicast: send still blocked after {waited:?}: {e}"),
            ));
        }
        if full {
            let left = SEND_WAIT_LIMIT - waited;
            let ms = left.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
            let mut p = libc::pollfd {
                fd: sock.as_raw_fd(),
                events: libc::POLLOUT,
                revents: 0,
            };
            // SAFETY: one valid pollfd for an fd that `sock` keeps open during the call.
            let rc = unsafe { libc::poll(&mut p, 1, ms) };
            if rc < 0 {
                let pe = io::Error::last_os_error();
                if pe.kind() != io::ErrorKind::Interrupted {
                    return Err(pe);
                }
            }
        } else {
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(Duration::from_millis(5));
        }
    }
}

/// Room for the datagrams of one [`McastSocket::recv_batch`]: `slots` buffers of `cap` bytes.
#[derive(Default)]
pub struct RecvBatch {
    buf: Vec<u8>,
    cap: usize,
    /// Of the datagrams taken: slot and length.
    lens: Vec<(usize, usize)>,
    n: usize,
}

impl RecvBatch {
    /// Buffers for `slots` datagrams of at most `cap` bytes each.
    pub fn new(slots: usize, cap: usize) -> RecvBatch {
        let cap = cap.max(1);
        RecvBatch {
            buf: vec![0; slots * cap],
            cap,
            lens: vec![(0, 0); slots],
            n: 0,
        }
    }

    pub fn slots(&self) -> usize {
        self.buf.len() / self.cap.max(1)
    }

    /// The largest datagram a slot holds.
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// Datagrams taken by the last `recv_batch`.
    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Datagram `i` (< `len()`) of the last `recv_batch`.
    pub fn get(&self, i: usize) -> &[u8] {
        let (slot, len) = self.lens[..self.n][i];
        &self.buf[slot * self.cap..slot * self.cap + len]
    }
}

/// The classic BPF program of [`McastSocket::drop_matching`]: load, compare, and on the first
/// difference accept the whole datagram; if everything matched, drop it. A UDP socket's filter
/// sees the datagram from its UDP header on, hence the 8 bytes added to every offset. Loads
/// beyond the end stop the program with 0 (drop).
fn drop_program(byte: (u32, u8), words: &[(u32, u32)]) -> Vec<libc::sock_filter> {
    const UDP_HEADER: u32 = 8;
    let ins = |code: u32, jt: u8, jf: u8, k: u32| libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    };
    let ld_b = libc::BPF_LD | libc::BPF_B | libc::BPF_ABS;
    let ld_w = libc::BPF_LD | libc::BPF_W | libc::BPF_ABS;
    let jeq = libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K;
    let ret = libc::BPF_RET | libc::BPF_K;
    // Each test is a load and a jump; the jump's false branch skips to "accept", which is the
    // last instruction: from test i (0-based, of n), 2 * (n - 1 - i) + 1 instructions ahead.
    let n = 1 + words.len();
    let skip = |i: usize| (2 * (n - 1 - i) + 1) as u8;
    let mut prog = vec![
        ins(ld_b, 0, 0, UDP_HEADER + byte.0),
        ins(jeq, 0, skip(0), u32::from(byte.1)),
    ];
    for (i, &(off, value)) in words.iter().enumerate() {
        // BPF loads words in network (big-endian) order; the header is little-endian.
        prog.push(ins(ld_w, 0, 0, UDP_HEADER + off));
        prog.push(ins(
            jeq,
            0,
            skip(i + 1),
            u32::from_be_bytes(value.to_le_bytes()),
        ));
    }
    prog.push(ins(ret, 0, 0, 0));
    prog.push(ins(ret, 0, 0, u32::MAX));
    prog
}

/// One non-blocking recv/recvfrom with MSG_TRUNC, so the result is the datagram's real length
/// (greater than `buf.len()` when it did not fit). `Ok(None)` when nothing is queued.
fn recv_raw(
    fd: RawFd,
    buf: &mut [u8],
    from: Option<&mut SocketAddrV4>,
) -> io::Result<Option<usize>> {
    let mut sa = MaybeUninit::<libc::sockaddr_in>::zeroed();
    let mut sa_len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    let want_from = from.is_some();
    loop {
        // SAFETY: buf is valid for writes of buf.len() bytes; sa/sa_len describe a writable
        // sockaddr_in of the stated size (or are null when the sender is not wanted).
        let rc = unsafe {
            libc::recvfrom(
                fd,
                buf.as_mut_ptr() as *mut libc::c_void,
                buf.len(),
                libc::MSG_DONTWAIT | libc::MSG_TRUNC,
                if want_from {
                    sa.as_mut_ptr() as *mut libc::sockaddr
                } else {
                    std::ptr::null_mut()
                },
                if want_from {
                    &mut sa_len
                } else {
                    std::ptr::null_mut()
                },
            )
        };
        if rc >= 0 {
            if let Some(from) = from {
                // SAFETY: recvfrom succeeded on an AF_INET socket and filled the sockaddr_in
                // (it was zeroed before, so it is initialised in any case).
                let sa = unsafe { sa.assume_init() };
                *from = SocketAddrV4::new(
                    Ipv4Addr::from(u32::from_be(sa.sin_addr.s_addr)),
                    u16::from_be(sa.sin_port),
                );
            }
            return Ok(Some(rc as usize));
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::Interrupted => continue,
            io::ErrorKind::WouldBlock => return Ok(None),
            _ => return Err(e),
        }
    }
}

fn set_recverr(sock: &Socket) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: setsockopt reads sizeof(c_int) bytes from a live c_int on an open socket.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_RECVERR,
            &on as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Empties the socket's error queue; true when there was something in it.
fn drain_errqueue(fd: RawFd) -> bool {
    let mut any = false;
    let mut buf = [0u8; 256];
    let mut ctl = [0u8; 256];
    for _ in 0..64 {
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr() as *mut libc::c_void,
            iov_len: buf.len(),
        };
        // SAFETY: msghdr is a plain C struct for which all-zero is valid.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = ctl.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = ctl.len();
        // SAFETY: msg points at a live iovec and control buffer of the stated lengths.
        let rc = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT) };
        if rc < 0 {
            break;
        }
        any = true;
    }
    any
}

#[derive(Clone, Copy)]
enum Buf {
    Recv,
    Send,
}

/// Asks for `size` bytes of buffer, first with the *FORCE option (root or CAP_NET_ADMIN: not
/// capped by rmem_max/wmem_max), else the plain one, and returns what getsockopt reports.
fn set_buffer(sock: &Socket, which: Buf, size: usize) -> io::Result<usize> {
    set_buffer_how(sock, which, size).map(|(granted, _)| granted)
}

/// The receive and send buffers a UDP socket of this process is granted when it asks for `size`
/// bytes of each, as [`McastSocket::open`] asks: (receive, send, forced), the sizes as
/// getsockopt reports them (Linux doubles the request), `forced` when the *FORCE options
/// worked (root or CAP_NET_ADMIN), so that `rmem_max` did not apply. The socket is neither
/// bound nor joined, and sends nothing.
pub fn granted_buffers(size: usize) -> io::Result<(usize, usize, bool)> {
    let sock = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
    let (rcv, forced_rcv) = set_buffer_how(&sock, Buf::Recv, size)?;
    let (snd, forced_snd) = set_buffer_how(&sock, Buf::Send, size)?;
    Ok((rcv, snd, forced_rcv && forced_snd))
}

/// [`set_buffer`], and whether the *FORCE option was taken.
fn set_buffer_how(sock: &Socket, which: Buf, size: usize) -> io::Result<(usize, bool)> {
    // The kernel doubles the value into an int; larger requests would overflow to garbage.
    let v = size.min(i32::MAX as usize / 2) as libc::c_int;
    let force = match which {
        Buf::Recv => libc::SO_RCVBUFFORCE,
        Buf::Send => libc::SO_SNDBUFFORCE,
    };
    // SAFETY: the fd is open; we pass a pointer to a live c_int and its exact size.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            force,
            &v as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    // EPERM without privilege is the expected failure; any failure falls back to the plain option.
    if rc != 0 {
        match which {
            Buf::Recv => sock.set_recv_buffer_size(v as usize)?,
            Buf::Send => sock.set_send_buffer_size(v as usize)?,
        }
    }
    let granted = match which {
        Buf::Recv => sock.recv_buffer_size(),
        Buf::Send => sock.send_buffer_size(),
    }?;
    Ok((granted, rc == 0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::IfaceSpec;
    use crate::net::{resolve_iface, udp_counters};

    fn lo() -> Iface {
        resolve_iface(Some(&IfaceSpec::Name("lo".into()))).unwrap()
    }

    /// A port per (process, test) so parallel tests, and other test binaries on this host, stay
    /// apart; groups are in 239.255.0.0/16 as the brief requires.
    fn port(k: u16) -> u16 {
        30000 + (std::process::id() % 2000) as u16 * 16 + k
    }

    fn group(k: u8) -> Ipv4Addr {
        Ipv4Addr::new(239, 255, 213, k)
    }

    fn open(k: u8, p: u16) -> McastSocket {
        McastSocket::open(&lo(), group(k), p, 0, 1 << 20).unwrap()
    }

    /// Receives one datagram within 2 s.
    fn recv_one(s: &McastSocket, buf: &mut [u8]) -> Option<usize> {
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            if let Some(n) = s.recv(buf).unwrap() {
                return Some(n);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            wait_readable(&[s.fd()], left).unwrap();
        }
    }

    #[test]
    fn two_sockets_on_one_group_both_hear_one_send_and_other_groups_do_not() {
        let p = port(0);
        let a = open(1, p);
        let b = open(1, p);
        let other = open(2, p);
        // On lo the kernel routes multicast through the device, which loops every packet back
        // whatever IP_MULTICAST_LOOP and the TTL say, so check the options themselves: on a real
        // interface they decide whether same-host ranks hear each other and where packets stop.
        assert!(!other.sock.multicast_all_v4().unwrap());
        assert!(a.sock.multicast_loop_v4().unwrap());
        assert_eq!(a.sock.multicast_ttl_v4().unwrap(), 0);
        assert_eq!(a.sock.multicast_if_v4().unwrap(), Ipv4Addr::LOCALHOST);
        assert_eq!(a.group(), SocketAddrV4::new(group(1), p));
        let mut buf = [0u8; 64];
        assert_eq!(a.recv(&mut buf).unwrap(), None, "nothing sent yet");

        a.send(b"hello group").unwrap();
        for s in [&a, &b] {
            let n = recv_one(s, &mut buf).expect("datagram arrives");
            assert_eq!(&buf[..n], b"hello group");
            assert_eq!(s.recv(&mut buf).unwrap(), None, "exactly one copy");
        }
        // The other group's socket shares the port but must hear nothing.
        assert!(wait_readable(&[other.fd()], Duration::from_millis(100))
            .unwrap()
            .is_empty());
        assert_eq!(other.recv(&mut buf).unwrap(), None);
    }

    #[test]
    fn drop_matching_drops_exactly_the_matching_datagrams() {
        let p = port(7);
        let a = open(7, p);
        let b = open(7, p);
        // a drops kind 1 from (comm 0x01020304, root 5): its own; b drops nothing.
        a.drop_matching((5, 1), &[(16, 0x0102_0304), (20, 5)])
            .unwrap();
        let dgram = |kind: u8, comm: u32, root: u32| {
            let mut d = vec![0u8; 48];
            d[5] = kind;
            d[16..20].copy_from_slice(&comm.to_le_bytes());
            d[20..24].copy_from_slice(&root.to_le_bytes());
            d
        };
        let sent = [
            dgram(1, 0x0102_0304, 5),           // dropped at a
            dgram(2, 0x0102_0304, 5),           // another kind
            dgram(1, 0x0102_0305, 5),           // another communicator
            dgram(1, 0x0102_0304, 6),           // another root
            dgram(1, 0x0403_0201, 0x0500_0000), // the same bytes in the other order
        ];
        for d in &sent {
            a.send(d).unwrap();
        }
        let mut buf = vec![0u8; 256];
        let mut got_a = Vec::new();
        while let Some(n) = recv_one(&a, &mut buf) {
            got_a.push(buf[..n].to_vec());
        }
        let mut got_b = Vec::new();
        while let Some(n) = recv_one(&b, &mut buf) {
            got_b.push(buf[..n].to_vec());
        }
        assert_eq!(got_a, sent[1..].to_vec());
        assert_eq!(got_b, sent.to_vec());
    }

    #[test]
    fn recv_batch_takes_several_in_order_and_drops_the_too_long() {
        let p = port(8);
        let tx = open(8, p);
        let rx = open(8, p);
        let mut batch = RecvBatch::new(4, 100);
        assert_eq!(rx.recv_batch(&mut batch).unwrap(), 0);
        let sent: Vec<Vec<u8>> = (0..6u8).map(|i| vec![i; 10 + usize::from(i)]).collect();
        for (i, d) in sent.iter().enumerate() {
            tx.send(d).unwrap();
            if i == 2 {
                tx.send(&[9u8; 101]).unwrap(); // one byte too long for a slot
            }
        }
        let mut got = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(2);
        while got.len() < sent.len() && Instant::now() < deadline {
            if rx.recv_batch(&mut batch).unwrap() == 0 {
                wait_readable(&[rx.fd()], Duration::from_millis(100)).unwrap();
            }
            assert!(batch.len() <= 4);
            for i in 0..batch.len() {
                got.push(batch.get(i).to_vec());
            }
        }
        assert_eq!(got, sent);
        assert_eq!(rx.truncated(), 1);
    }

    #[test]
    fn send_batch_delivers_all_in_order() {
        let p = port(1);
        let tx = open(3, p);
        let rx = open(3, p);
        let payloads: Vec<Vec<u8>> = (0..150u32)
            .map(|i| {
                let mut v = i.to_le_bytes().to_vec();
                v.resize(100 + i as usize, i as u8);
                v
            })
            .collect();
        let refs: Vec<&[u8]> = payloads.iter().map(Vec::as_slice).collect();
        let mut sent = 0;
        while sent < refs.len() {
            sent += tx.send_batch(&refs[sent..]).unwrap();
        }
        assert_eq!(tx.send_batch(&[]).unwrap(), 0);
        let mut buf = [0u8; 512];
        for want in &payloads {
            let n = recv_one(&rx, &mut buf).expect("every datagram arrives");
            assert_eq!(&buf[..n], want.as_slice());
        }
        assert_eq!(rx.recv(&mut buf).unwrap(), None);
    }

    #[test]
    fn oversized_datagrams_are_dropped_and_counted() {
        let p = port(2);
        let tx = open(4, p);
        let rx = open(4, p);
        tx.send(&[7u8; 300]).unwrap();
        tx.send(&[8u8; 10]).unwrap();
        let mut small = [0u8; 100];
        assert_eq!(recv_one(&rx, &mut small), Some(10));
        assert_eq!(small[..10], [8u8; 10]);
        assert_eq!(rx.truncated(), 1);
    }

    #[test]
    fn buffers_are_granted_when_root() {
        let want = 8 << 20;
        let s = McastSocket::open(&lo(), group(5), port(3), 0, want).unwrap();
        assert!(s.rcvbuf() > 0 && s.sndbuf() > 0);
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            assert!(s.rcvbuf() >= want, "granted {}", s.rcvbuf());
            assert!(s.sndbuf() >= want, "granted {}", s.sndbuf());
        }
    }

    #[test]
    fn rejects_a_unicast_group() {
        let e = McastSocket::open(&lo(), Ipv4Addr::LOCALHOST, port(4), 0, 1 << 16);
        assert_eq!(e.err().map(|e| e.kind()), Some(io::ErrorKind::InvalidInput));
    }

    #[test]
    fn unicast_roundtrip() {
        let a = UnicastSocket::open(Ipv4Addr::LOCALHOST).unwrap();
        let b = UnicastSocket::open(Ipv4Addr::LOCALHOST).unwrap();
        assert_eq!(a.local_addr().ip(), &Ipv4Addr::LOCALHOST);
        assert_ne!(a.local_addr().port(), 0);
        let mut buf = [0u8; 32];
        assert_eq!(b.recv_from(&mut buf).unwrap(), None);
        a.send_to(b"query", b.local_addr()).unwrap();
        let ready = wait_readable(&[a.fd(), b.fd()], Duration::from_secs(2)).unwrap();
        assert_eq!(ready, vec![1]);
        let (n, from) = b.recv_from(&mut buf).unwrap().unwrap();
        assert_eq!((&buf[..n], from), (&b"query"[..], a.local_addr()));
        b.send_to(b"answer", from).unwrap();
        wait_readable(&[a.fd()], Duration::from_secs(2)).unwrap();
        let (n, from) = a.recv_from(&mut buf).unwrap().unwrap();
        assert_eq!((&buf[..n], from), (&b"answer"[..], b.local_addr()));
    }

    #[test]
    fn wait_readable_times_out_without_returning_early() {
        let a = UnicastSocket::open(Ipv4Addr::LOCALHOST).unwrap();
        for ms in [0u64, 30, 120] {
            let t = Instant::now();
            let r = wait_readable(&[a.fd()], Duration::from_millis(ms)).unwrap();
            let took = t.elapsed();
            assert!(r.is_empty());
            assert!(took >= Duration::from_millis(ms), "{ms} ms took {took:?}");
            assert!(
                took < Duration::from_millis(ms + 500),
                "{ms} ms took {took:?}"
            );
        }
        // More fds than the on-stack array, the ready one last.
        let socks: Vec<UnicastSocket> = (0..10)
            .map(|_| UnicastSocket::open(Ipv4Addr::LOCALHOST).unwrap())
            .collect();
        socks[0].send_to(b"x", socks[9].local_addr()).unwrap();
        let fds: Vec<RawFd> = socks.iter().map(UnicastSocket::fd).collect();
        let mut ready = vec![99];
        wait_readable_into(&fds, Duration::from_secs(2), &mut ready).unwrap();
        assert_eq!(ready, vec![9]);
        assert!(wait_readable(&[1_000_000], Duration::from_millis(10)).is_err());
    }

    #[test]
    fn udp_counters_count_our_traffic() {
        let before = udp_counters().unwrap();
        let a = UnicastSocket::open(Ipv4Addr::LOCALHOST).unwrap();
        let b = UnicastSocket::open(Ipv4Addr::LOCALHOST).unwrap();
        for _ in 0..5 {
            a.send_to(b"count me", b.local_addr()).unwrap();
        }
        let mut buf = [0u8; 16];
        let mut got = 0;
        while got < 5 {
            wait_readable(&[b.fd()], Duration::from_secs(2)).unwrap();
            while b.recv_from(&mut buf).unwrap().is_some() {
                got += 1;
            }
        }
        let d = udp_counters().unwrap().since(&before);
        assert!(d.in_datagrams >= 5, "{d:?}");
        assert!(d.out_datagrams >= 5, "{d:?}");
    }
}
