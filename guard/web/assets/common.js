// sanctum-guard web prompt: shared helpers. Request data is only ever put in the page with
// textContent (see el/vis); nothing here builds markup from strings.
'use strict';
const SG = (() => {
  const state = { csrf: null, identity: null, skew: 0, canDecide: true };

  // Characters that change how text reads or do not show are marked, e.g. ⟨U+202E⟩: controls
  // (Cc), format characters (Cf: bidi, zero-width, soft hyphen, tags), line and paragraph
  // separators, every default-ignorable code point (Hangul fillers U+115F/U+3164/U+FFA0, the
  // combining grapheme joiner, variation selectors), the spaces that are not U+0020, and the
  // Braille blank.
  const SPECIAL = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000\u2800]/u;
  function code(c) {
    const names = { '\n': '\\n', '\t': '\\t', '\r': '\\r', '\u001b': 'ESC' };
    if (names[c]) return names[c];
    return 'U+' + c.codePointAt(0).toString(16).toUpperCase().padStart(4, '0');
  }

  // A fragment showing `s` as text, special characters as marked spans.
  function vis(s) {
    const frag = document.createDocumentFragment();
    let buf = '';
    for (const c of String(s ?? '')) {
      if (SPECIAL.test(c)) {
        if (buf) { frag.appendChild(document.createTextNode(buf)); buf = ''; }
        const m = document.createElement('span');
        m.className = 'esc';
        m.title = 'hidden character made visible';
        m.textContent = '⟨' + code(c) + '⟩';
        frag.appendChild(m);
      } else {
        buf += c;
      }
    }
    if (buf) frag.appendChild(document.createTextNode(buf));
    return frag;
  }

  // Whether `s` holds a character that hides or changes how text reads. A newline or a tab
  // in a write or a script is ordinary text that shows as itself (a line break, an indent):
  // warning for every multi-line write taught people to ignore the warning. They are still
  // marked where text is shown (vis); CR, ESC, bidi, zero-width and other controls count.
  const PLAIN = /[\n\t]/g;
  function hasSpecial(s) { return SPECIAL.test(String(s ?? '').replace(PLAIN, '')); }

  // `s` as plain text with the same markers (for places that take no markup: notifications).
  function visText(s) {
    let out = '';
    for (const c of String(s ?? '')) out += SPECIAL.test(c) ? '⟨' + code(c) + '⟩' : c;
    return out;
  }

  // el('div', {class: 'x'}, 'text', child...) — strings become text nodes.
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const k of kids) {
      if (k === null || k === undefined || k === false) continue;
      e.appendChild(typeof k === 'string' ? document.createTextNode(k) : k);
    }
    return e;
  }

  async function api(method, path, body) {
    const opts = { method, headers: {}, credentials: 'same-origin' };
    if (method !== 'GET') {
      opts.headers['X-CSRF-Token'] = state.csrf || '';
      opts.headers['Content-Type'] = 'application/json';
      opts.body = JSON.stringify(body || {});
    }
    const r = await fetch(path, opts);
    let data = null;
    try { data = await r.json(); } catch (_) { data = null; }
    if (r.status === 401 && path !== '/api/login') signedOut();
    return { status: r.status, ok: r.ok, data: data || {} };
  }

  function signedOut() {
    for (const id of ['inbox', 'history']) {
      const n = document.getElementById(id);
      if (n) n.hidden = true;
    }
    const so = document.getElementById('signed-out');
    if (so) so.hidden = false;
    const who = document.getElementById('identity');
    if (who) who.textContent = '';
  }

  function banner(text) {
    const b = document.getElementById('banner');
    if (!b) return;
    b.textContent = text || '';
    b.hidden = !text;
  }

  async function session() {
    const r = await api('GET', '/api/session');
    if (!r.ok) { signedOut(); return false; }
    state.csrf = r.data.csrf;
    state.identity = r.data.identity;
    // A viewer sees the cards without decision buttons (the guard refuses its votes anyway).
    state.canDecide = r.data.canDecide !== false;
    document.getElementById('identity').textContent = 'Signed in as ' + r.data.identity +
      (r.data.role ? ' (' + r.data.role + ')' : '');
    const failing = r.data.notifyFailing || [];
    if (failing.length) banner('Push notifications failing (decisions go on): ' + failing.join('; '));
    const out = document.getElementById('logout');
    out.addEventListener('click', async () => {
      await api('POST', '/api/logout');
      state.csrf = null;
      signedOut();
    });
    return true;
  }

  function now() { return Date.now() + state.skew; }
  function setServerNow(ms) { if (ms) state.skew = ms - Date.now(); }

  function time(ms) {
    if (!ms) return '—';
    const d = new Date(ms);
    return d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
  }

  // "approved by alice (1 of 2)": who approved a request that needs several reviewers.
  function approvalsText(e) {
    const need = e.approvalsRequired || 1;
    if (need <= 1) return '';
    const got = e.approvals || [];
    return got.length ? 'approved by ' + got.join(', ') + ' (' + got.length + ' of ' + need + ')' :
      'needs ' + need + ' different reviewers to approve (none yet)';
  }

  function decisionText(d) {
    if (!d) return '';
    const who = d.by === 'human' ? d.name : d.by === 'fallback' ? 'nobody (deadline fallback)' : 'policy';
    return who;
  }

  // What an Allow always stored, in words ('' for any other decision): the entry's `grants`
  // (the exact allowlist entries, listed by the code that stores them), each one argv in one
  // working directory that later runs unasked there. Never "this exact command": a request
  // of several segments stores one entry per gated segment.
  function storedText(d, e) {
    if (!d || d.kind !== 'allow-always') return '';
    const entries = (e && e.grants && e.grants.entries) || [];
    if (!entries.length) return 'allowed ALWAYS: stored allowlist entries for the gated commands of this request';
    const one = (x) => (x.argv || []).join(' ') + (x.cwd ? ' in ' + x.cwd : '');
    return 'allowed ALWAYS: stored ' + entries.length + (entries.length > 1 ? ' allowlist entries: ' : ' allowlist entry: ') +
      entries.map(one).join('; ') + ' (each exact argv runs unasked there)';
  }

  // What the request asks, as a title line.
  function actionTitle(a) {
    switch (a && a.kind) {
      case 'exec': return 'Run a command';
      case 'file-write': return 'Write a file';
      case 'file-delete': return 'Delete a file';
      case 'file-read': return 'Read a file';
      case 'http': return 'HTTP request';
      case 'browser': return 'Browser action';
      case 'package-install': return 'Install packages';
      case 'process-exit': return 'Exit the process';
      case 'skill-install': return 'Install a skill';
      case 'config-change': return 'Change configuration';
      case 'tool': return 'Use the ' + String(a.name) + ' tool';
      default: return 'Request';
    }
  }

  return { el, vis, visText, hasSpecial, api, session, banner, signedOut, now, setServerNow, time, decisionText, approvalsText, storedText, actionTitle, state };
})();
