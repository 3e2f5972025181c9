//! Public-API stress, overwrite runs: many writers with the step-over
//! on and off, readers of every kind or none, memory and file rings,
//! tiny pages and the largest payloads, both write paths; every event
//! read whole, once and in its writer's order, and every count
//! reconciled (see `api_stress/harness.rs`).

mod api_stress;
use api_stress::harness::*;

#[test]
fn overwrite_many_writers_without_reader_keep_each_writers_newest_events() {
    for path in paths() {
        let out = run(&Run::new(path));
        survivors_are_a_suffix(&out);
        assert!(out.stats.overrun > 0, "{:?}", out.stats);
    }
}

#[test]
fn overwrite_many_writers_with_each_reader_account_for_every_event() {
    for path in paths() {
        for reader in [
            Reader::ByEvent,
            Reader::ByPage,
            Reader::Merged,
            Reader::Committed,
        ] {
            let mut r = Run::new(path);
            r.reader = reader;
            r.per_writer = 2000;
            run(&r);
        }
    }
}

#[test]
fn overwrite_file_rings_account_for_every_event_and_recover_what_was_left() {
    let dir = scratch("file");
    for path in paths() {
        for reader in [
            Reader::None,
            Reader::ByEvent,
            Reader::ByPage,
            Reader::Committed,
        ] {
            let mut r = Run::new(path);
            let f = dir.join(format!("{}-{reader:?}.ring", path.name()));
            r.file = Some(f);
            r.reader = reader;
            r.per_writer = 1500;
            run(&r);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn overwrite_tiny_pages_and_max_payloads_stay_whole() {
    for path in paths() {
        for (page, min, max) in [
            (64usize, 8usize, 24usize),
            (128, 60, 88),
            (4096, 4000, 4056),
        ] {
            for reader in [Reader::None, Reader::ByEvent] {
                let mut r = Run::new(path);
                r.page = page;
                r.pages = 3;
                r.min_len = min;
                r.max_len = max;
                r.reader = reader;
                r.per_writer = if page > 1000 { 400 } else { 1500 };
                run(&r);
            }
        }
    }
}

#[test]
fn overwrite_tiny_file_ring_pages_and_max_payloads_stay_whole() {
    let dir = scratch("tinyfile");
    for path in paths() {
        for (page, min, max) in [(64usize, 8usize, 24usize), (4096, 4000, 4056)] {
            let mut r = Run::new(path);
            r.page = page;
            r.pages = 2;
            r.min_len = min;
            r.max_len = max;
            r.reader = Reader::ByEvent;
            r.per_writer = if page > 1000 { 300 } else { 1500 };
            r.file = Some(dir.join(format!("{}-{page}.ring", path.name())));
            run(&r);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn overwrite_on_the_tsc_clock_whole_writes_account_for_every_event() {
    for path in paths() {
        for reader in [Reader::None, Reader::Merged] {
            let mut r = Run::new(path);
            r.clock = "tsc";
            r.reader = reader;
            run(&r);
        }
    }
}

#[test]
fn overwrite_with_step_over_off_refuses_busy_and_still_accounts() {
    for path in paths() {
        let mut r = Run::new(path);
        r.step_over = false;
        r.reader = Reader::ByEvent;
        let out = run(&r);
        assert_eq!(out.stats.pages_stepped_over, 0);
    }
}

#[test]
fn long_held_reservations_past_fixup_after_with_a_reader_are_counted_lost_not_read() {
    for path in paths() {
        let mut r = Run::new(path);
        r.fixup_after = Some(Duration::from_millis(2));
        r.hold = Duration::from_millis(8);
        r.hold_every = 301;
        r.per_writer = 1500;
        r.reader = Reader::ByEvent;
        run(&r);
    }
}

#[test]
fn held_reservations_committed_from_another_cpu_account_for_every_event() {
    let dir = scratch("migrate");
    for path in paths() {
        for file in [false, true] {
            let mut r = Run::new(path);
            r.migrate = true;
            r.hold_every = 41;
            r.per_writer = 1200;
            r.reader = Reader::ByEvent;
            if file {
                r.file = Some(dir.join(format!("{}.ring", path.name())));
            }
            run(&r);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn small_quarantines_with_fixups_and_step_overs_account_for_every_event() {
    let dir = scratch("quarantine");
    for path in paths() {
        for q in [0usize, 1, 2, 3, 5] {
            for file in [false, true] {
                let mut r = Run::new(path);
                r.quarantine = Some(q);
                r.fixup_after = Some(Duration::from_millis(1));
                r.hold = Duration::from_millis(3);
                r.hold_every = 151;
                r.per_writer = 900;
                r.reader = Reader::ByEvent;
                if file {
                    r.file = Some(dir.join(format!("{}-{q}.ring", path.name())));
                }
                run(&r);
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
