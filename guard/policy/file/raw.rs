//! The policy file as written: serde shapes with spans, one per layer (the embedded default,
//! then the user's file). Unknown keys are errors.

use super::PolicyError;
use crate::policy::profile::ProfileSpec;
use crate::policy::request::Status;
use crate::policy::verdict::Category;
use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPolicy {
    pub version: Spanned<i64>,
    pub workspace: Option<Spanned<String>>,
    pub ask_every_command: Option<bool>,
    pub agent: Option<RawAgent>,
    #[serde(default)]
    pub categories: BTreeMap<Category, RawCategory>,
    #[serde(default)]
    pub commands: Vec<RawCommand>,
    pub sensitive: Option<RawSensitive>,
    #[serde(default)]
    pub profiles: BTreeMap<String, Spanned<ProfileSpec>>,
    pub gateway: Option<crate::policy::gateway_filter::RawGatewayTables>,
    pub egress: Option<crate::policy::egress::RawEgress>,
    pub approvals: Option<RawApprovals>,
}

/// `[approvals]`: how a person's approval is given.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawApprovals {
    /// Categories whose allow needs a fresh passkey assertion bound to the request.
    pub passkey_categories: Option<Vec<Category>>,
    /// How many different reviewer accounts must approve a request of a category.
    pub approvals_required: Option<BTreeMap<Category, Spanned<i64>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAgent {
    pub home: Option<Spanned<String>>,
    pub path: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCategory {
    pub status: Option<Spanned<Status>>,
    pub profile: Option<Spanned<String>>,
    pub persist: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCommand {
    pub program: Spanned<String>,
    pub args: Option<Vec<String>>,
    pub category: Spanned<Category>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSensitive {
    #[serde(default)]
    pub paths: Vec<Spanned<String>>,
}

/// Deserialises one layer; syntax and shape errors carry line and column.
pub(super) fn parse_layer(text: &str, origin: &str) -> Result<RawPolicy, PolicyError> {
    toml::from_str(text).map_err(|e| PolicyError::syntax(origin, text, &e))
}
