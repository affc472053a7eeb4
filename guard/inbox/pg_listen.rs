//! The fleet store's ear: a thread with its own connection that `LISTEN`s on the inbox
//! channel and hands each changed row to the serving inbox. When the connection drops it
//! reconnects by itself and says `Resync` (changes made meanwhile were not heard; the
//! inbox re-reads what it waits on). The inbox's 100 ms poll stays as the fallback.

use super::pg::CHANNEL;
use super::pg_conn::Database;
use postgres::fallible_iterator::FallibleIterator;
use std::time::Duration;

/// What the listener heard.
pub enum Change {
    /// Row `id`, filed by guard `guard`, was added or left `pending`.
    Row { guard: String, id: String },
    /// (Re)connected: anything may have changed unheard.
    Resync,
    /// Nothing for a while (lets the handler say it is still wanted).
    Idle,
}

/// Why a listening connection ended.
#[derive(Debug, thiserror::Error)]
enum ListenError {
    #[error(transparent)]
    Connect(#[from] super::InboxError),
    #[error(transparent)]
    Pg(#[from] postgres::Error),
}

/// Starts the listener; it stops when `on_change` returns false.
pub fn spawn(
    db: Database,
    mut on_change: impl FnMut(Change) -> bool + Send + 'static,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("inbox-pg-listen".into())
        .spawn(move || loop {
            match listen(&db, &mut on_change) {
                Ok(()) => return,
                Err(e) => {
                    tracing::warn!(error = %e, "inbox: fleet listener lost its connection");
                    if !on_change(Change::Idle) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(250));
                }
            }
        })
        .map(|_| ())
}

/// One connection's life: `Ok` when the handler is done, `Err` when the connection failed.
fn listen(db: &Database, on_change: &mut impl FnMut(Change) -> bool) -> Result<(), ListenError> {
    let mut client = db.connect()?;
    client.batch_execute(&format!("LISTEN {CHANNEL}"))?;
    if !on_change(Change::Resync) {
        return Ok(());
    }
    loop {
        let mut any = false;
        let mut heard = client.notifications();
        let mut it = heard.timeout_iter(Duration::from_secs(1));
        while let Some(n) = it.next()? {
            any = true;
            let Some((guard, id)) = n.payload().split_once(' ') else {
                continue;
            };
            let change = Change::Row {
                guard: guard.to_owned(),
                id: id.to_owned(),
            };
            if !on_change(change) {
                return Ok(());
            }
        }
        drop(it);
        drop(heard);
        if client.is_closed() {
            // A closed connection ends the iterator quietly: make it an error to reconnect.
            client.simple_query("SELECT 1")?;
        }
        if !any && !on_change(Change::Idle) {
            return Ok(());
        }
    }
}
