//! What both runtimes set up the same way for an HTTP server of one or more engines
//! (`HttpOptions::engines`): the bound listener, its policy and its startup announcement
//! ([`Listening`]); for each engine its engine, sharing one [`Shared`] with the others and
//! drawing from a seed of its own, and its performer, with an operator of its own and the
//! first performer's syncer thread ([`set_up`]); the count of connections each engine holds,
//! which places new ones; and the names of the threads and of the runtime in the startup line.

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;

use bernstein_core::engine::shared::{Shared, Sharing};
use bernstein_core::engine::{Engine, EngineConfig, Moment};
use bernstein_core::ledger::Fold;
use bernstein_core::protocol::Server;
use bernstein_core::transport::http::{HttpOptions, HttpPolicy};

use crate::Stopper;
use crate::http::operator::Operator;
use crate::http::{Announcement, HttpServerHandle, open_listener};
use crate::perform::{Backend, Performer, Wake, seed};

/// A server bound and about to serve: what a runtime's `bind_tls` starts from.
pub struct Listening {
    pub listener: TcpListener,
    pub policy: HttpPolicy,
    pub local_addr: SocketAddr,
    pub announcement: Announcement,
    /// The options, saying whether the server speaks TLS.
    pub options: HttpOptions,
    /// How many engines serve (at least one).
    pub engines: usize,
}

impl Listening {
    /// Binds `options`' address for `server` (the startup bind rule of [`open_listener`]),
    /// speaking TLS or not.
    pub fn bind<F>(
        server: &Server<F>,
        mut options: HttpOptions,
        tls: bool,
    ) -> io::Result<Listening> {
        options.tls = tls;
        let (listener, policy) = open_listener(&server.config, &options)?;
        Ok(Listening {
            local_addr: listener.local_addr()?,
            announcement: Announcement::new(&policy, &options),
            engines: options.engines.max(1),
            listener,
            policy,
            options,
        })
    }

    /// The handle of this server once `threads` serve it (`threads_are` names them in errors),
    /// `stopper` asking them to stop.
    pub fn serving(
        self,
        threads: Vec<JoinHandle<io::Result<()>>>,
        stopper: Stopper,
        threads_are: &'static str,
    ) -> HttpServerHandle {
        let (addr, announcement) = (self.local_addr, self.announcement);
        HttpServerHandle::new(addr, announcement, threads, stopper, threads_are)
    }
}

/// Each engine of the server with its performer, in order, one per `wakes` (each engine's
/// wake-up).
pub fn set_up<F: Fold>(
    server: &Arc<Server<F>>,
    backend: &Backend<F>,
    listening: &Listening,
    wakes: Vec<Wake>,
    now: Moment,
) -> io::Result<Vec<(Performer<F>, Engine<F>)>> {
    let Listening {
        policy, options, ..
    } = listening;
    let performers = performers(backend, options, wakes)?;
    let engines = engines(server, policy, options, now)?;
    Ok(performers.into_iter().zip(engines).collect())
}

/// The name of engine `index`'s thread (`base` for the first).
pub fn thread_name(base: &str, index: usize) -> String {
    match index {
        0 => base.to_string(),
        i => format!("{base}-{i}"),
    }
}

/// The server's engines, one per [`HttpOptions::engines`], in order.
fn engines<F: Fold>(
    server: &Arc<Server<F>>,
    policy: &HttpPolicy,
    options: &HttpOptions,
    now: Moment,
) -> io::Result<Vec<Engine<F>>> {
    let count = options.engines.max(1);
    let shared = Arc::new(Shared::new(count));
    (0..count)
        .map(|index| {
            let mut config = EngineConfig::http(policy.clone(), options.clone(), seed()?);
            let shared = shared.clone();
            config.sharing = Sharing { index, shared };
            Ok(Engine::new(server.clone(), config, now))
        })
        .collect()
}

/// The engines' performers, one per `wakes` (each engine's wake-up), in order.
fn performers<F: Fold>(
    backend: &Backend<F>,
    options: &HttpOptions,
    wakes: Vec<Wake>,
) -> io::Result<Vec<Performer<F>>> {
    let workers = options.limits.workers.div_ceil(wakes.len().max(1));
    let mut performers: Vec<Performer<F>> = Vec::with_capacity(wakes.len());
    for wake in wakes {
        let operator = Some(Operator::new(
            backend.store.clone(),
            backend.clock.clone(),
            backend.views.clone(),
            !options.mcp,
        ));
        let performer = match performers.first() {
            None => {
                let (store, host) = (backend.store.clone(), backend.host.clone());
                Performer::new(store, host, operator, workers, 1, wake)?
            }
            Some(first) => first.beside(operator, workers, wake)?,
        };
        performers.push(performer);
    }
    Ok(performers)
}

/// How the startup line names a runtime serving with `engines` engines.
pub fn runtime_label(runtime: &str, engines: usize) -> String {
    match engines.max(1) {
        1 => format!("runtime {runtime}, one event loop"),
        n => format!("runtime {runtime}, {n} event loops"),
    }
}

/// How many connections each engine of a server holds, so that a new one goes to the engine
/// with the fewest (both runtimes place connections by it).
#[derive(Debug)]
pub struct Loads(Vec<AtomicUsize>);

impl Loads {
    pub fn new(engines: usize) -> Loads {
        Loads((0..engines.max(1)).map(|_| AtomicUsize::new(0)).collect())
    }

    /// Connections engine `i` holds.
    pub fn get(&self, i: usize) -> usize {
        self.0[i].load(Ordering::Acquire)
    }

    /// The engine holding the fewest connections, `me` on a tie.
    pub fn least(&self, me: usize) -> usize {
        (0..self.0.len()).fold(me, |best, i| {
            if self.get(i) < self.get(best) {
                i
            } else {
                best
            }
        })
    }

    /// Engine `i` holds one connection more.
    pub fn up(&self, i: usize) {
        self.0[i].fetch_add(1, Ordering::AcqRel);
    }

    /// Engine `i` holds one connection less.
    pub fn down(&self, i: usize) {
        let _ = self.0[i].fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    }
}

#[cfg(test)]
mod tests {
    use super::Loads;

    #[test]
    fn a_connection_goes_to_the_engine_holding_the_fewest_and_a_tie_stays_put() {
        let loads = Loads::new(3);
        assert_eq!(loads.least(1), 1);
        loads.up(1);
        loads.up(0);
        assert_eq!(loads.least(1), 2);
        loads.up(2);
        loads.up(2);
        loads.down(0);
        loads.down(0);
        assert_eq!((loads.get(0), loads.least(2)), (0, 0));
    }
}
