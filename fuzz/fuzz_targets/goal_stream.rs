//! Any bytes as a streamed binary schedule (MPICAST_GOAL_WINDOW): opening a rank's section
//! and running it through a sliding window never panics and always ends, finished or with a
//! fault; and a file that also loads whole (a valid program) streams without a fault, through
//! the same actions as the whole load.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mpicast_fuzz::goal::binary;
use mpicast_fuzz::sched::{ActionId, Backend, Execution, Op, WindowedExecution};
use std::convert::Infallible;

/// Completes every action as it starts (or, for odd ids, at the next progress call).
struct Imm(Vec<String>, Vec<ActionId>);

impl Backend for Imm {
    type Error = Infallible;
    fn start(&mut self, id: ActionId, op: &Op, done: &mut Vec<ActionId>) -> Result<(), Infallible> {
        self.0.push(format!("{op:?}"));
        if id % 2 == 0 {
            done.push(id);
        } else {
            self.1.push(id);
        }
        Ok(())
    }
    fn progress(&mut self, done: &mut Vec<ActionId>) -> Result<(), Infallible> {
        done.append(&mut self.1);
        Ok(())
    }
}

fuzz_target!(|data: &[u8]| {
    let whole = binary::load(data).ok();
    for rank in 0..3u32 {
        let Ok((info, stream)) = binary::stream_rank(data, rank) else {
            continue;
        };
        let window = 1 + data.len() % 5;
        let mut ex = WindowedExecution::new(stream, window);
        let mut be = Imm(Vec::new(), Vec::new());
        let mut steps = 0usize;
        while !ex.test(&mut be).unwrap() {
            steps += 1;
            assert!(steps <= 4 * info.actions + 16, "the run did not end");
        }
        assert!(ex.peak_window() <= window);
        if let Some(p) = &whole {
            if let Some(rp) = p.ranks.get(rank as usize) {
                assert_eq!(ex.fault(), None, "a valid program faulted when streamed");
                assert_eq!(ex.completed(), rp.schedule.len());
                let mut want = Imm(Vec::new(), Vec::new());
                Execution::new(&rp.schedule).wait(&mut want).unwrap();
                let mut a = be.0;
                let mut b = want.0;
                a.sort();
                b.sort();
                assert_eq!(a, b, "streamed and whole runs differ");
            }
        }
    }
});
