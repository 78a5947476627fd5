use std::hint::black_box;
use std::time::Instant;
fn bench(name: &str, len: usize, mut f: impl FnMut(&[u8]) -> u8) {
    let data = vec![7u8; len];
    let iters = (200_000_000 / len).max(1000);
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        let mut acc = 0u8;
        for _ in 0..iters { acc ^= f(black_box(&data)); }
        black_box(acc);
        best = best.min(t.elapsed().as_secs_f64() / iters as f64);
    }
    println!("{name:<22} {len:>6} B  {:>8.3} us  {:>6.2} GB/s", best * 1e6, len as f64 / best / 1e9);
}
fn main() {
    let key = [3u8; 32];
    for len in [1520usize, 9000, 65064] {
        bench("blake3 keyed", len, |d| blake3::keyed_hash(&key, d).as_bytes()[0]);
        bench("hmac-sha256 (sha2)", len, |d| { use hmac::Mac; let mut m = <hmac::Hmac::<sha2::Sha256> as hmac::Mac>::new_from_slice(&key).unwrap(); m.update(d); m.finalize().into_bytes()[0] });
        let rk = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key);
        bench("hmac-sha256 (ring)", len, |d| ring::hmac::sign(&rk, d).as_ref()[0]);
        bench("siphash13-128", len, |d| { use std::hash::Hasher; let mut h = siphasher::sip128::SipHasher13::new_with_key(&[1;16]); h.write(d); siphasher::sip128::Hasher128::finish128(&h).h1 as u8 });
        bench("siphash24-128", len, |d| { use std::hash::Hasher; let mut h = siphasher::sip128::SipHasher24::new_with_key(&[1;16]); h.write(d); siphasher::sip128::Hasher128::finish128(&h).h1 as u8 });
        use aes_gcm::aead::{AeadInPlace, KeyInit};
        let g = aes_gcm::Aes256Gcm::new_from_slice(&key).unwrap();
        bench("aes256-gmac (rustcrypto)", len, |d| { let mut b: [u8;0]=[]; g.encrypt_in_place_detached(&[0u8;12].into(), d, &mut b).unwrap()[0] });
        let rg = ring::aead::LessSafeKey::new(ring::aead::UnboundKey::new(&ring::aead::AES_256_GCM, &key).unwrap());
        bench("aes256-gmac (ring)", len, |d| { let mut b: [u8;0]=[]; rg.seal_in_place_separate_tag(ring::aead::Nonce::assume_unique_for_key([0;12]), ring::aead::Aad::from(d), &mut b).unwrap().as_ref()[0] });
        bench("poly1305 (one-time)", len, |d| { use poly1305::universal_hash::KeyInit; poly1305::Poly1305::new(&key.into()).compute_unpadded(d)[0] });
        bench("polyval+blake3-64B", len, |d| { use polyval::universal_hash::{KeyInit, UniversalHash}; let mut p = polyval::Polyval::new(&[5u8;16].into()); p.update_padded(d); let h = p.finalize(); let mut b = [0u8;64]; b[..16].copy_from_slice(&h); blake3::keyed_hash(&key, &b).as_bytes()[0] });
        bench("memcpy", len, |d| { let v = d.to_vec(); v[len/2] });
    }
}
