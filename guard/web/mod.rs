//! Door: the web prompt. A person signs in with a one-time link (`login`), sees the requests
//! that wait for a human live (`sse`), and decides them through [`Inbox::decide`], bound to
//! the request hash the page showed, as `web:<account>/<session>@<address>`, each decision
//! the vote of the session's reviewer account (`reviewer_gate`) (`api`). The page
//! and its assets are embedded in the binary (`assets/`, plain JS and CSS, strict CSP).
//! Also `/healthz`, `/readyz` and Prometheus `/metrics` (`metrics`, the process-wide
//! registry the engine counts into).
//!
//! Transport: hyper HTTP/1.1 on a TCP listener, TLS (rustls, ring provider) when a
//! certificate and key are given. Slow clients are bounded by header/body/handshake
//! timeouts and a connection cap; SSE connections by their own cap.

mod agent;
mod api;
mod api_audit;
mod api_auth;
mod api_decide;
mod api_list;
mod assets;
pub mod auth;
pub mod auth_at;
mod card_egress;
mod card_facts;
mod confusable;
mod events;
mod grants_page;
mod http;
pub mod login;
pub mod metrics;
mod passkey;
mod passkey_api;
pub mod passkey_store;
pub mod pg_auth;
mod pg_sessions;
mod reviewer_gate;
mod secret;
mod server;
mod signin_guard;
mod view;

pub use server::{start, WebError, WebHandle};

use std::net::SocketAddr;
use std::path::PathBuf;

/// Default listen address.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8484";

/// Where and how the web prompt listens (from `serve --web-listen`, the config's `[web]`
/// section, or `SANCTUM_WEB_*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebSettings {
    /// None: the web prompt is off (`--web-listen off`).
    pub listen: Option<SocketAddr>,
    /// True when the address was chosen (flag, env or file): failing to bind is then fatal;
    /// the default address failing to bind is a warning.
    pub explicit: bool,
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    /// The origin people use when it is not the listen address (a reverse proxy, a name),
    /// e.g. `https://guard.example:8443`. Host and Origin headers must match it.
    pub public_origin: Option<String>,
    /// Where the other guards of a fleet link to this page (`[web] public_url`: an https
    /// or loopback origin, checked at load); None: they show the reference as text.
    pub public_url: Option<String>,
    /// When History suggests a bounded grant (`min_approvals` 0: never).
    pub suggest: crate::grants::SuggestRule,
}

#[cfg(test)]
mod tests {
    use crate::app::config::{Config, ConfigError, Overrides};

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn web_listen_precedence_off_and_errors() {
        let home = env_of(&[("HOME", "/h")]);
        let c = Config::load_with(&Overrides::default(), &home).expect("default");
        assert_eq!(c.web.listen, Some("127.0.0.1:8484".parse().expect("addr")));
        assert!(!c.web.explicit, "the default address is not a choice");
        let env = env_of(&[("HOME", "/h"), ("SANCTUM_WEB_LISTEN", "127.0.0.1:9000")]);
        let c = Config::load_with(&Overrides::default(), &env).expect("env");
        assert_eq!(c.web.listen, Some("127.0.0.1:9000".parse().expect("addr")));
        assert!(c.web.explicit);
        let flag = Overrides {
            web_listen: Some("off".into()),
            ..Default::default()
        };
        assert_eq!(
            Config::load_with(&flag, &env).expect("flag").web.listen,
            None
        );
        for bad in ["8484", "localhost:8484", "127.0.0.1", ""] {
            let o = Overrides {
                web_listen: Some(bad.into()),
                ..Default::default()
            };
            assert!(
                matches!(Config::load_with(&o, &home), Err(ConfigError::WebListen(_))),
                "{bad:?}"
            );
        }
    }
}
