//! An ordered parallel map for streams: items are read on the calling thread, worked on by a
//! few threads, and their results handed on in the items' order by one more. A bounded number
//! of chunks is in flight, so memory stays flat whatever the stream's length; and each item is
//! parsed, worked on and dropped by the thread that took it, so what it allocates is freed where
//! it was allocated.

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::sync_channel;
use std::sync::{Arc, Mutex};

/// Chunks in flight per worker: enough that no worker waits on another's slow chunk.
const IN_FLIGHT_PER_WORKER: usize = 4;

/// A worker panicked on a chunk; the map stopped there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerPanicked(pub String);

/// Maps `items` with `work` on `workers` threads, `chunk` items at a time, and gives each result
/// to `sink` in the items' order. Each worker starts with its own `init()` state (a parser, a
/// runtime). `sink` stops the map by breaking: no further item is read. Returns whether every
/// chunk was worked on without a panic; the results before a panicking chunk were given.
pub fn ordered_map<T, R, W>(
    items: impl Iterator<Item = T>,
    chunk: usize,
    workers: usize,
    init: impl Fn() -> W + Sync,
    work: impl Fn(&mut W, T) -> R + Sync,
    mut sink: impl FnMut(R) -> ControlFlow<()> + Send,
) -> Result<(), WorkerPanicked>
where
    T: Send,
    R: Send,
{
    let chunk = chunk.max(1);
    let workers = workers.max(1);
    let in_flight = workers * IN_FLIGHT_PER_WORKER;
    // A chunk is read only with a token, and the sink gives its token back once it has handed
    // the chunk on: no more than `in_flight` chunks are ever held, wherever they are.
    let (give_token, take_token) = sync_channel::<()>(in_flight);
    for _ in 0..in_flight {
        let _ = give_token.send(());
    }
    let (send_work, take_work) = sync_channel::<(usize, Vec<T>)>(in_flight);
    // Held by the workers only: when the last one has gone, the reader's sends fail.
    let take_work = Arc::new(Mutex::new(take_work));
    let (send_done, take_done) = sync_channel::<(usize, Result<Vec<R>, WorkerPanicked>)>(in_flight);
    let stopped = AtomicBool::new(false);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let send_done = send_done.clone();
            let take_work = Arc::clone(&take_work);
            let (init, work, stopped) = (&init, &work, &stopped);
            scope.spawn(move || {
                let mut state = init();
                loop {
                    let next = take_work.lock().map(|r| r.recv());
                    let Ok(Ok((index, items))) = next else { break };
                    if stopped.load(Ordering::Relaxed) {
                        break;
                    }
                    let out = catch_unwind(AssertUnwindSafe(|| {
                        items
                            .into_iter()
                            .map(|item| work(&mut state, item))
                            .collect::<Vec<R>>()
                    }))
                    .map_err(|panic| WorkerPanicked(panic_message(&*panic)));
                    let panicked = out.is_err();
                    if send_done.send((index, out)).is_err() || panicked {
                        break;
                    }
                }
            });
        }
        drop(send_done);
        drop(take_work);
        let stopped = &stopped;
        let handed_on = scope.spawn(move || {
            let mut pending = BTreeMap::new();
            let mut next = 0;
            let handed = 'hand: {
                for (index, out) in take_done {
                    pending.insert(index, out);
                    while let Some(out) = pending.remove(&next) {
                        next += 1;
                        let out = match out {
                            Ok(out) => out,
                            Err(panic) => break 'hand Err(panic),
                        };
                        for r in out {
                            if sink(r).is_break() {
                                break 'hand Ok(());
                            }
                        }
                        let _ = give_token.send(());
                    }
                }
                Ok(())
            };
            stopped.store(true, Ordering::Relaxed);
            handed
        });
        let mut items = items.fuse();
        for index in 0.. {
            // No token: the sink stopped.
            if take_token.recv().is_err() || stopped.load(Ordering::Relaxed) {
                break;
            }
            let part: Vec<T> = items.by_ref().take(chunk).collect();
            if part.is_empty() || send_work.send((index, part)).is_err() {
                break;
            }
        }
        drop(send_work);
        handed_on
            .join()
            .unwrap_or_else(|panic| Err(WorkerPanicked(panic_message(&*panic))))
    })
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a worker panicked".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_in_the_items_order_whatever_the_workers_take() {
        for workers in [1, 2, 3, 8] {
            for chunk in [1, 3, 64] {
                let mut seen = Vec::new();
                ordered_map(
                    0..1000u64,
                    chunk,
                    workers,
                    || (),
                    |(), i| {
                        // Uneven work, so chunks finish out of order.
                        if i % 7 == 0 {
                            std::thread::sleep(std::time::Duration::from_micros(50));
                        }
                        i * 2
                    },
                    |r| {
                        seen.push(r);
                        ControlFlow::Continue(())
                    },
                )
                .unwrap();
                assert_eq!(seen, (0..1000).map(|i| i * 2).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn a_break_stops_reading_the_items() {
        let read = std::sync::atomic::AtomicUsize::new(0);
        let items = (0..).inspect(|_| {
            read.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        });
        let mut seen = 0;
        ordered_map(
            items,
            10,
            2,
            || (),
            |(), i: u64| i,
            |_| {
                seen += 1;
                if seen == 25 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            },
        )
        .unwrap();
        assert_eq!(seen, 25);
        // An endless stream was read only as far as the chunks in flight.
        assert!(read.load(std::sync::atomic::Ordering::Relaxed) <= 10 * (3 + 2 * 4));
    }

    #[test]
    fn a_panicking_worker_stops_the_map_and_says_so() {
        let mut seen = Vec::new();
        let r = ordered_map(
            0..10_000u64,
            5,
            2,
            || (),
            |(), i| {
                assert!(i != 42, "item 42 is poison");
                i
            },
            |r| {
                seen.push(r);
                ControlFlow::Continue(())
            },
        );
        assert_eq!(r, Err(WorkerPanicked("item 42 is poison".to_owned())));
        assert_eq!(seen, (0..40).collect::<Vec<_>>());
    }

    #[test]
    fn each_worker_keeps_its_own_state() {
        let mut total = 0;
        ordered_map(
            0..100u64,
            4,
            3,
            || 0u64,
            |count, _| {
                *count += 1;
                *count
            },
            |r| {
                total += u64::from(r >= 1);
                ControlFlow::Continue(())
            },
        )
        .unwrap();
        assert_eq!(total, 100);
    }
}
