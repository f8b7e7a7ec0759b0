//! A fixed pool of threads for the blocking half of a request (the ledger's file IO and fsync),
//! so the executor never blocks. Jobs queue when every thread is busy: the pool bounds how
//! much blocking work runs at once, like runtime-std's worker pool. Results come back through
//! a one-slot channel that wakes the waiting task.
//!
//! It holds no request state and never touches a socket.

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread;

type Job = Box<dyn FnOnce() + Send>;

/// The pool; dropping it lets its threads finish their job and exit.
#[derive(Debug)]
pub struct BlockingPool {
    jobs: Mutex<Option<Sender<Job>>>,
}

impl BlockingPool {
    pub fn new(threads: usize) -> std::io::Result<BlockingPool> {
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..threads.max(1) {
            let rx = rx.clone();
            thread::Builder::new()
                .name(format!("bernstein-smol-blocking-{i}"))
                .spawn(move || work(&rx))?;
        }
        Ok(BlockingPool {
            jobs: Mutex::new(Some(tx)),
        })
    }

    /// Runs `f` on a pool thread and waits for it without blocking the executor.
    pub async fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = smol::channel::bounded(1);
        let job: Job = Box::new(move || {
            let _ = tx.try_send(f());
        });
        let rejected = {
            let jobs = self.jobs.lock().unwrap_or_else(|p| p.into_inner());
            match jobs.as_ref() {
                Some(sender) => sender.send(job).err().map(|e| e.0),
                None => Some(job),
            }
        };
        if let Some(job) = rejected {
            // The pool is shutting down: run on smol's shared blocking pool instead.
            smol::unblock(job).await;
        }
        rx.recv()
            .await
            .expect("a pool job always sends its result before its sender drops")
    }

    /// Stops taking jobs; threads exit once the queue is drained.
    pub fn close(&self) {
        self.jobs.lock().unwrap_or_else(|p| p.into_inner()).take();
    }
}

fn work(rx: &Mutex<Receiver<Job>>) {
    loop {
        let job = rx.lock().unwrap_or_else(|p| p.into_inner()).recv();
        match job {
            Ok(job) => job(),
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_jobs_and_survives_close() {
        let pool = BlockingPool::new(2).unwrap();
        let sum: u64 = smol::block_on(async {
            let mut total = 0;
            for i in 0..10u64 {
                total += pool.run(move || i * 2).await;
            }
            total
        });
        assert_eq!(sum, 90);
        pool.close();
        assert_eq!(smol::block_on(pool.run(|| 7)), 7);
    }
}
