//! The `MPI_Info` keys the library reads from communicators (`session::HINT_KEYS`) are the
//! settings table's (`config::HINT_KEYS`), in the same order.

#[test]
fn the_session_reads_the_tables_hint_keys() {
    assert_eq!(
        mpicast::session::HINT_KEYS.as_slice(),
        mpicast::config::HINT_KEYS
    );
    assert!(mpicast::config::HINT_KEYS.contains(&mpicast::topology::INFO_KEY));
}
