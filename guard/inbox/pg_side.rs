//! A connection to the fleet database for the tables that live beside the inbox (grants,
//! reviewer accounts and votes): opened as the inbox opens its own, its table created on
//! first connect, driven from a thread of its own (the synchronous client's runtime must
//! never run inside the guard's), and reopened on the next call once lost. Until the
//! database answers again, every call fails with [`Unavailable`]: the caller fails closed.

use postgres::Client;
use std::sync::mpsc;

/// The database cannot be reached (no server, a dropped connection, a timeout).
#[derive(Debug, Clone, thiserror::Error)]
#[error("fleet database unavailable: {0}")]
pub struct Unavailable(pub String);

type Job = Box<dyn FnOnce(&mut Slot) + Send>;

struct Slot {
    config: crate::inbox::pg_conn::Database,
    /// Created (idempotently) on every new connection, under `lock`.
    schema: &'static str,
    lock: i64,
    client: Option<Client>,
}

impl Slot {
    fn client(&mut self) -> Result<&mut Client, Unavailable> {
        if self.client.as_ref().is_some_and(Client::is_closed) {
            self.client = None;
        }
        let client = match self.client.take() {
            Some(c) => c,
            None => self.connect()?,
        };
        Ok(self.client.insert(client))
    }

    fn connect(&self) -> Result<Client, Unavailable> {
        let mut client =
            super::pg::open_client(&self.config).map_err(|e| Unavailable(e.to_string()))?;
        let fail = |e: postgres::Error| Unavailable(format!("creating tables: {e}"));
        let mut tx = client.transaction().map_err(fail)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&self.lock])
            .map_err(fail)?;
        tx.batch_execute(self.schema).map_err(fail)?;
        tx.commit().map_err(fail)?;
        Ok(client)
    }
}

/// One connection thread to the fleet database. Callers' error types implement
/// `From<Unavailable>` and map a failed statement themselves.
pub struct PgWorker {
    jobs: mpsc::Sender<Job>,
}

impl std::fmt::Debug for PgWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the config: its URL may hold a password.
        f.debug_struct("PgWorker").finish_non_exhaustive()
    }
}

impl PgWorker {
    /// A worker on `config` whose connections first create `schema` (under the advisory
    /// lock `lock`: several guards start at once). The database need not be up.
    pub fn start(
        config: crate::inbox::pg_conn::Database,
        name: &str,
        schema: &'static str,
        lock: i64,
    ) -> std::io::Result<PgWorker> {
        let (jobs, rx) = mpsc::channel::<Job>();
        let mut slot = Slot {
            config,
            schema,
            lock,
            client: None,
        };
        std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                for job in rx {
                    job(&mut slot);
                }
            })?;
        Ok(PgWorker { jobs })
    }

    /// Runs `f` on a live connection and waits for its answer. A connection that broke
    /// under `f` is dropped, so the next call reconnects.
    pub fn call<R, E>(
        &self,
        f: impl FnOnce(&mut Client) -> Result<R, E> + Send + 'static,
    ) -> Result<R, E>
    where
        R: Send + 'static,
        E: From<Unavailable> + Send + 'static,
    {
        let (tx, rx) = mpsc::sync_channel(1);
        let job: Job = Box::new(move |slot: &mut Slot| {
            let res = match slot.client() {
                Ok(c) => f(c),
                Err(e) => Err(E::from(e)),
            };
            if res.is_err() && slot.client.as_ref().is_some_and(Client::is_closed) {
                slot.client = None;
            }
            let _ = tx.send(res);
        });
        let gone = || E::from(Unavailable("connection thread gone".into()));
        self.jobs.send(job).map_err(|_| gone())?;
        rx.recv().map_err(|_| gone())?
    }
}

/// Whether `e` is the database's own refusal (a constraint, a bad statement) rather than
/// the database being away: a server shutting down, out of connections or cutting this one
/// (SQLSTATE classes 08, 53, 57) is away.
pub fn refused_by_db(e: &postgres::Error) -> bool {
    e.as_db_error()
        .is_some_and(|d| !matches!(d.code().code().get(..2), Some("08" | "53" | "57")))
}
