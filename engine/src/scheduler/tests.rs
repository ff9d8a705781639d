//! Scheduler behaviour under simulated steps (no model: the "sampled" token is a constant).

use super::*;

fn sched(max_batch: usize, budget: usize, pages: usize, block: usize) -> Scheduler {
    Scheduler::new(
        SchedulerConfig { max_batch, max_batched_tokens: budget, lookahead: 0 },
        BlockManager::new(pages, block),
    )
}

/// One step: schedule, commit, append a token to every sampled sequence.
fn step(s: &mut Scheduler) -> Vec<Chunk> {
    let chunks = s.schedule();
    s.commit(&chunks);
    for c in &chunks {
        if c.sample {
            s.get_mut(c.seq_id).unwrap().tokens.push(7);
        }
    }
    chunks
}

#[test]
fn chunked_prefill_then_decode() {
    let mut s = sched(4, 8, 100, 4);
    s.add(Seq::new(1, (0..20).collect()));
    assert_eq!(step(&mut s), vec![Chunk { seq_id: 1, start: 0, len: 8, sample: false }]);
    assert_eq!(step(&mut s), vec![Chunk { seq_id: 1, start: 8, len: 8, sample: false }]);
    assert_eq!(step(&mut s), vec![Chunk { seq_id: 1, start: 16, len: 4, sample: true }]);
    assert_eq!(step(&mut s), vec![Chunk { seq_id: 1, start: 20, len: 1, sample: true }]);
    assert_eq!(s.get(1).unwrap().block_table.len(), 6, "22 tokens -> 6 pages of 4");
}

#[test]
fn decodes_go_first_and_new_prefills_share_the_budget() {
    let mut s = sched(4, 8, 100, 4);
    s.add(Seq::new(1, vec![1, 2, 3]));
    step(&mut s); // prefill of 1
    s.add(Seq::new(2, (0..30).collect()));
    let c = step(&mut s);
    assert_eq!(c[0], Chunk { seq_id: 1, start: 3, len: 1, sample: true });
    assert_eq!(c[1], Chunk { seq_id: 2, start: 0, len: 7, sample: false });
}

#[test]
fn max_batch_limits_admission() {
    let mut s = sched(2, 100, 100, 4);
    for id in 0..3 {
        s.add(Seq::new(id, vec![1, 2]));
    }
    let c = step(&mut s);
    assert_eq!(c.len(), 2);
    assert_eq!((s.num_running(), s.num_waiting()), (2, 1));
    s.remove(0);
    let c = step(&mut s);
    assert!(c.iter().any(|c| c.seq_id == 2));
}

#[test]
fn out_of_pages_preempts_newest_and_recomputes() {
    // 4 pages of 2 tokens: two 3-token prompts take 2 pages each; after one decode each holds
    // 5 tokens, and computing position 4 needs a fifth page, so the newer one is preempted.
    let mut s = sched(4, 100, 4, 2);
    s.add(Seq::new(1, vec![1, 2, 3]));
    s.add(Seq::new(2, vec![4, 5, 6]));
    step(&mut s); // both prefilled: positions 0..3 computed, 4 tokens each
    assert_eq!(step(&mut s).len(), 2); // position 3 fits the second page of each
    let c = step(&mut s); // position 4 of seq 1 needs a third page -> preempt seq 2
    assert_eq!(c, vec![Chunk { seq_id: 1, start: 4, len: 1, sample: true }]);
    assert_eq!(s.preemptions(), 1);
    let v = s.get(2).unwrap();
    assert_eq!((v.num_computed, v.block_table.len(), v.tokens.len()), (0, 0, 5));
    // When seq 1 finishes, seq 2 is recomputed from all its tokens (prompt + generated).
    s.remove(1);
    assert_eq!(step(&mut s), vec![Chunk { seq_id: 2, start: 0, len: 5, sample: true }]);
    assert_eq!(s.block_manager().used_pages(), 3);
}

#[test]
fn removing_frees_pages_everywhere() {
    let mut s = sched(1, 100, 10, 4);
    s.add(Seq::new(1, (0..9).collect()));
    s.add(Seq::new(2, (0..9).collect()));
    step(&mut s);
    assert_eq!(s.block_manager().used_pages(), 3);
    assert!(s.remove(2).is_some(), "waiting sequences can be cancelled too");
    s.remove(1);
    assert_eq!(s.block_manager().used_pages(), 0);
    assert!(s.is_idle());
}
