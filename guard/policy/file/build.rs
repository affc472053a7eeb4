//! Building a [`Policy`] from layers: each layer laid over the earlier ones (the embedded
//! default first), then every layer's values validated against the merged result.

use super::raw::{RawCategory, RawCommand, RawPolicy};
use super::{
    category_name, CategoryRule, CommandOverride, Policy, PolicyError, ALL_CATEGORIES,
    PROTECTED_DIRS, PROTECTED_PROGRAMS,
};
use crate::policy::egress::EgressRule;
use crate::policy::egress_routes::ProviderRoute;
use crate::policy::gateway_filter::GatewayTables;
use crate::policy::paths::{lexical_clean, validate_rule, SensitivePaths};
use crate::policy::profile::{builtin_profiles, ProfileSpec};
use crate::policy::request::Status;
use crate::policy::verdict::Category;
use std::collections::BTreeMap;

/// The most different reviewers a category may require (more is a staffing plan, not a check).
pub const MAX_APPROVALS: u8 = 5;
use std::path::{Path, PathBuf};

/// One layer with the text and origin its spans refer to.
pub(super) type Layer<'a> = (&'a RawPolicy, &'a str, &'a str);

/// What the layers set, later layers winning.
struct Merged {
    workspace: Option<PathBuf>,
    ask_every_command: bool,
    home: Option<PathBuf>,
    path: Option<String>,
    categories: BTreeMap<Category, CategoryRule>,
    profiles: BTreeMap<String, ProfileSpec>,
    gateway: GatewayTables,
    /// `[[egress.rules]]` of every layer, the default's first: a file adds rules.
    egress: Vec<EgressRule>,
    /// `[[egress.routes]]`: a later layer's route replaces an earlier one of its name.
    routes: Vec<ProviderRoute>,
    /// `[approvals] passkey_categories`: a later layer's list replaces an earlier one.
    passkey_categories: Vec<Category>,
    /// `[approvals] approvals_required`: a later layer's entries replace earlier ones, per
    /// category.
    approvals_required: BTreeMap<Category, u8>,
}

impl Merged {
    /// Nothing set; the sandbox's built-in profiles are the base a layer may redefine or
    /// add to.
    fn new() -> Self {
        Merged {
            workspace: None,
            ask_every_command: false,
            home: None,
            path: None,
            categories: BTreeMap::new(),
            profiles: builtin_profiles(),
            gateway: GatewayTables::default(),
            egress: Vec::new(),
            routes: Vec::new(),
            passkey_categories: Vec::new(),
            approvals_required: BTreeMap::new(),
        }
    }

    /// Lays one layer over what the earlier ones set.
    fn add(&mut self, (layer, text, origin): &Layer) -> Result<(), PolicyError> {
        if *layer.version.get_ref() != 1 {
            return Err(PolicyError::at(
                origin,
                text,
                layer.version.span(),
                format!(
                    "unsupported version {}; this guard reads version 1",
                    layer.version.get_ref()
                ),
            ));
        }
        if let Some(ws) = &layer.workspace {
            self.workspace = Some(absolute_path(ws, text, origin, "workspace")?);
        }
        if let Some(a) = layer.ask_every_command {
            self.ask_every_command = a;
        }
        if let Some(list) = layer
            .approvals
            .as_ref()
            .and_then(|a| a.passkey_categories.as_ref())
        {
            self.passkey_categories = list.clone();
        }
        if let Some(map) = layer
            .approvals
            .as_ref()
            .and_then(|a| a.approvals_required.as_ref())
        {
            for (cat, n) in map {
                let v = u8::try_from(*n.get_ref())
                    .ok()
                    .filter(|v| (1..=MAX_APPROVALS).contains(v))
                    .ok_or_else(|| {
                        PolicyError::at(
                            origin,
                            text,
                            n.span(),
                            format!(
                                "approvals_required.{} must be 1 to {MAX_APPROVALS} different reviewers",
                                super::category_name(*cat)
                            ),
                        )
                    })?;
                self.approvals_required.insert(*cat, v);
            }
        }
        if let Some(agent) = &layer.agent {
            if let Some(h) = &agent.home {
                self.home = Some(absolute_path(h, text, origin, "agent.home")?);
            }
            if let Some(p) = &agent.path {
                self.path = Some(p.get_ref().clone());
            }
        }
        for (cat, rule) in &layer.categories {
            let entry = self.categories.entry(*cat).or_insert(CategoryRule {
                status: Status::Blocked,
                profile: None,
                persist: false,
            });
            if let Some(s) = &rule.status {
                entry.status = *s.get_ref();
            }
            if let Some(p) = &rule.profile {
                entry.profile = Some(p.get_ref().clone()).filter(|p| !p.is_empty());
            }
            if let Some(p) = rule.persist {
                entry.persist = p;
            }
        }
        for (name, spec) in &layer.profiles {
            self.profiles.insert(name.clone(), spec.get_ref().clone());
        }
        if let Some(g) = &layer.gateway {
            self.gateway.merge(g);
        }
        for (i, r) in layer.egress.iter().flat_map(|e| &e.rules).enumerate() {
            let here = format!("{origin} egress rule {}", i + 1);
            let rule = EgressRule::from_raw(r.get_ref(), here)
                .map_err(|e| PolicyError::at(origin, text, r.span(), e.why))?;
            self.egress.push(rule);
        }
        for (i, r) in layer.egress.iter().flat_map(|e| &e.routes).enumerate() {
            let here = format!("{origin} egress route {}", i + 1);
            let route = ProviderRoute::from_raw(r.get_ref(), here)
                .map_err(|e| PolicyError::at(origin, text, r.span(), e.why))?;
            self.routes.retain(|old| old.name != route.name);
            self.routes.push(route);
        }
        Ok(())
    }
}

/// Merges layers (later wins), then validates every layer's values against the result.
pub(super) fn build(origin: &str, layers: &[Layer]) -> Result<Policy, PolicyError> {
    let mut m = Merged::new();
    for layer in layers {
        m.add(layer)?;
    }
    // Until the host names the agent's home, `~` rules are checked against `/` (a policy
    // without `agent.home` is re-based with `with_agent_home` before it decides anything).
    let rule_home = m.home.clone().unwrap_or_else(|| PathBuf::from("/"));
    let mut commands = Vec::new();
    let mut sensitive_extra = Vec::new();
    for (layer, text, origin) in layers.iter().rev() {
        for cmd in &layer.commands {
            commands.push(command_override(cmd, text, origin, &m.categories)?);
        }
        for extra in layer.sensitive.iter().flat_map(|s| &s.paths) {
            validate_rule(extra.get_ref(), &rule_home)
                .map_err(|e| PolicyError::at(origin, text, extra.span(), e.to_string()))?;
            sensitive_extra.push(extra.get_ref().clone());
        }
    }
    for (layer, text, origin) in layers {
        validate_categories(layer, text, origin, &m.profiles)?;
    }
    if let Some(missing) = ALL_CATEGORIES
        .iter()
        .find(|c| !m.categories.contains_key(c))
    {
        return Err(PolicyError::Invalid {
            origin: origin.to_string(),
            line: 1,
            column: 1,
            message: format!("category {} has no rule", category_name(*missing)),
        });
    }
    let sensitive = SensitivePaths::new(&rule_home, &sensitive_extra)?;
    Ok(Policy {
        origin: origin.to_string(),
        workspace: m.workspace,
        ask_every_command: m.ask_every_command,
        agent_home: m.home,
        agent_path: m.path,
        categories: m.categories,
        commands,
        sensitive_extra,
        sensitive,
        profiles: m.profiles,
        gateway: m.gateway,
        egress: m.egress,
        routes: m.routes,
        passkey_categories: m.passkey_categories,
        approvals_required: m.approvals_required,
    })
}

/// The rules on `[categories.*]` a file cannot break.
fn validate_categories(
    layer: &RawPolicy,
    text: &str,
    origin: &str,
    profiles: &BTreeMap<String, ProfileSpec>,
) -> Result<(), PolicyError> {
    for (cat, rule) in &layer.categories {
        if let Some(status) = &rule.status {
            if *cat == Category::SensitivePath && *status.get_ref() != Status::Blocked {
                return Err(PolicyError::at(
                    origin,
                    text,
                    status.span(),
                    "categories.sensitive-path.status must be \"blocked\": no policy may make a sensitive path readable or writable",
                ));
            }
        }
        if *cat == Category::SecretInTree {
            secret_in_tree_rule(text, origin, rule)?;
        }
        if let Some(profile) = &rule.profile {
            let name = profile.get_ref();
            if !name.is_empty() && !profiles.contains_key(name) {
                return Err(PolicyError::at(
                    origin,
                    text,
                    profile.span(),
                    format!(
                        "categories.{}.profile: no profile named {name:?} (known: {})",
                        category_name(*cat),
                        profiles.keys().cloned().collect::<Vec<_>>().join(", ")
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// `secret-in-tree` runs a read that walks past a secret: never by itself, and when a person
/// approves it, only under a profile that keeps the workspace's secrets unreadable.
fn secret_in_tree_rule(text: &str, origin: &str, rule: &RawCategory) -> Result<(), PolicyError> {
    use crate::policy::profile::{AUTONOMOUS_HTTP_PROFILE, AUTONOMOUS_PROFILE};
    if let Some(status) = &rule.status {
        if *status.get_ref() == Status::Autonomous {
            return Err(PolicyError::at(
                origin,
                text,
                status.span(),
                "categories.secret-in-tree.status must be \"gated\" or \"blocked\": a read that walks past a secret is a person's call",
            ));
        }
    }
    if let Some(profile) = &rule.profile {
        if ![AUTONOMOUS_PROFILE, AUTONOMOUS_HTTP_PROFILE].contains(&profile.get_ref().as_str()) {
            return Err(PolicyError::at(
                origin,
                text,
                profile.span(),
                format!(
                    "categories.secret-in-tree.profile must be {AUTONOMOUS_PROFILE:?} or {AUTONOMOUS_HTTP_PROFILE:?}: only they keep the workspace's secrets unreadable"
                ),
            ));
        }
    }
    Ok(())
}

fn command_override(
    cmd: &RawCommand,
    text: &str,
    origin: &str,
    categories: &BTreeMap<Category, CategoryRule>,
) -> Result<CommandOverride, PolicyError> {
    let program = cmd.program.get_ref().trim().to_string();
    let err = |span, msg: String| PolicyError::at(origin, text, span, msg);
    if program.is_empty() {
        return Err(err(cmd.program.span(), "commands.program is empty".into()));
    }
    let glob = if program.contains('/') {
        if !program.starts_with('/') {
            return Err(err(
                cmd.program.span(),
                format!(
                    "commands.program {program:?}: a path must be absolute (or give a bare name)"
                ),
            ));
        }
        let g = globset::GlobBuilder::new(&program)
            .literal_separator(true)
            .build()
            .map_err(|e| err(cmd.program.span(), format!("commands.program: {e}")))?;
        Some(g.compile_matcher())
    } else {
        None
    };
    let category = *cmd.category.get_ref();
    let lifted = !matches!(
        category,
        Category::Privilege
            | Category::PipeToShell
            | Category::ApprovalsOff
            | Category::SkillInstall
            | Category::SensitivePath
    ) && categories.get(&category).map(|r| r.status) != Some(Status::Blocked);
    if lifted {
        let hit = PROTECTED_PROGRAMS.iter().find(|p| match &glob {
            Some(g) => PROTECTED_DIRS
                .iter()
                .any(|d| g.is_match(format!("{d}/{p}"))),
            None => program == **p,
        });
        if let Some(p) = hit {
            return Err(err(
                cmd.category.span(),
                format!(
                    "commands entry {program:?} would move {p:?} (privilege, shell or OpenClaw's own CLI) to category {:?}, which is not blocked",
                    category_name(category)
                ),
            ));
        }
    }
    Ok(CommandOverride {
        program,
        args: cmd.args.clone().unwrap_or_default(),
        category,
        glob,
    })
}

fn absolute_path(
    value: &toml::Spanned<String>,
    text: &str,
    origin: &str,
    key: &str,
) -> Result<PathBuf, PolicyError> {
    let p = Path::new(value.get_ref());
    if !p.is_absolute() {
        return Err(PolicyError::at(
            origin,
            text,
            value.span(),
            format!("{key} must be an absolute path"),
        ));
    }
    Ok(lexical_clean(p))
}
