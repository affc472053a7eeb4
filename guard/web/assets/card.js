'use strict';
// One inbox card: what the request is, why it needs a person, what each decision does. Pure
// rendering (every request field goes through `textContent` via SG.el/SG.vis); the inbox
// (inbox.js) wires the buttons, selection and keys.
SG.card = (() => {
  const { el, vis } = SG;

  function stateLabel(s) {
    return { pending: 'PENDING', approved: 'APPROVED', denied: 'DENIED', expired: 'EXPIRED',
      'resolved-elsewhere': 'RESOLVED ELSEWHERE' }[s] || String(s).toUpperCase();
  }

  function field(label, value, opts) {
    const v = value === null || value === undefined || value === '' ? '—' : value;
    return [el('dt', {}, label), el('dd', opts || {}, typeof v === 'string' ? vis(v) : v)];
  }

  // Past these, a card shows the start and an expander with the rest.
  const LONG_TEXT = 2000;
  const LONG_ARGV = 40;

  function whatBlock(a) {
    const box = el('div', { class: 'what' });
    if (a.kind === 'exec') {
      if (a.command) {
        box.appendChild(el('div', { class: 'label' }, 'Shell text'));
        const text = String(a.command);
        const pre = (t) => el('pre', { class: 'cmd', 'data-field': 'command' }, vis(t));
        // Long text is cut with its size named and the rest one click away (never hidden
        // silently: the full text is in the expander).
        if (text.length > LONG_TEXT) {
          box.appendChild(pre(text.slice(0, LONG_TEXT) + '…'));
          box.appendChild(el('details', { class: 'more-text' },
            el('summary', {}, 'Show all ' + text.length + ' characters'), pre(text)));
        } else {
          box.appendChild(pre(text));
        }
      }
      const tokens = a.argv || [];
      const argvList = (from, to) => {
        const ol = el('ol', { class: 'argv', 'data-field': 'argv', 'aria-label': 'argv tokens', start: String(from) });
        tokens.slice(from, to).forEach((t, i) => ol.appendChild(
          el('li', {}, el('span', { class: 'idx' }, String(from + i)), el('code', {}, vis(t)))));
        return ol;
      };
      if (tokens.length) {
        box.appendChild(el('div', { class: 'label argv-label' }, 'argv (' + tokens.length + ' tokens)'));
        box.appendChild(argvList(0, LONG_ARGV));
        if (tokens.length > LONG_ARGV) {
          box.appendChild(el('details', { class: 'more-argv' },
            el('summary', {}, (tokens.length - LONG_ARGV) + ' more tokens'), argvList(LONG_ARGV, tokens.length)));
        }
      }
    } else {
      // A tool call's content (a write's preview, an edit's or a patch's text) is shown as
      // text, line by line, with hidden characters marked.
      for (const k of ['preview', 'patch']) {
        if (typeof a[k] !== 'string') continue;
        box.appendChild(el('div', { class: 'label' }, k === 'preview' ? 'Content (start)' : 'Change'));
        const pre = el('pre', { class: 'cmd', 'data-field': k });
        a[k].split('\n').forEach((line, i) => { if (i) pre.appendChild(document.createTextNode('\n')); pre.appendChild(vis(line)); });
        box.appendChild(pre);
      }
      const rows = Object.entries(a).filter(([k]) => k !== 'kind' && k !== 'preview' && k !== 'patch');
      const dl = el('dl', { class: 'kv' });
      for (const [k, v] of rows) {
        const text = Array.isArray(v) ? v.join(' ') : (v === null ? '' : String(v));
        dl.append(...field(k, text, { class: 'mono' }));
      }
      box.appendChild(dl);
    }
    return box;
  }

  function build(e) {
    const a = e.action || {};
    // Over the values themselves: JSON text would spell a newline or ESC as plain `\n`.
    const special = (v) => typeof v === 'string' ? SG.hasSpecial(v) :
      (v && typeof v === 'object' ? Object.values(v).some(special) : false);
    const warn = special(a) ?
      el('p', { class: 'warn' }, '⚠ Hidden or control characters in this request are shown as ⟨…⟩ markers.') : null;
    // Words that read as something else (a Cyrillic `с` in `сurl`), named by the server.
    const lookalikes = e.confusables || [];
    const look = lookalikes.length ?
      el('ul', { class: 'warn confusables' }, ...lookalikes.map((t) => el('li', {}, '⚠ ', vis(t)))) : null;
    const reasons = el('ul', { class: 'reasons' });
    for (const r of e.reasons || []) reasons.appendChild(el('li', {}, el('code', {}, vis(r.code)), ' ', vis(r.message)));
    const reason = el('input', { class: 'reason', type: 'text', maxlength: '500',
      placeholder: 'Reason (optional; the agent sees it)', 'aria-label': 'Reason for denying' });
    const offered = e.offered || [];
    // Accessible names carry the command, so a screen reader says what each button decides.
    const what = SG.visText(e.summary).slice(0, 160);
    const btnOnce = el('button', { class: 'allow', type: 'button', 'data-act': 'allow-once', 'aria-label': 'Allow once: ' + what }, 'Allow once');
    const btnAlways = offered.includes('allow-always') ?
      el('button', { class: 'allow-always', type: 'button', 'data-act': 'allow-always', 'aria-label': 'Allow always: ' + what }, 'Allow always') : null;
    const btnDeny = el('button', { class: 'deny', type: 'button', 'data-act': 'deny', 'aria-label': 'Deny: ' + what }, 'Deny');
    const status = el('p', { class: 'card-status', role: 'status' });
    const countdown = el('span', { class: 'countdown' });
    const dl = el('dl', { class: 'kv' });
    const exec = a.kind === 'exec';
    if (exec) {
      dl.append(...field('cwd', a.cwd, { class: 'mono' }));
      dl.append(...field('program', a.resolved_path || [...new Set(e.programs || [])].join(' · '), { class: 'mono' }));
      dl.append(...field('env keys', (a.env_keys || []).join(' '), { class: 'mono' }));
      // The values the run gets (bound by the request hash); secret-looking ones masked.
      for (const v of a.env || []) {
        const shown = typeof v.value === 'string' ? v.value :
          '(masked: ' + v.len + ' bytes, sha256 ' + String(v.sha256 || '').slice(0, 16) + '…)';
        dl.append(...field('env ' + v.name, shown + (v.dropped ? '  [dropped: the run does not get it]' : ''),
          { class: 'mono', 'data-env': v.name }));
      }
    }
    dl.append(...field('asked at', SG.time(e.createdMs), { 'data-field': 'asked' }));
    if (offered.includes('allow-always')) {
      dl.append(...field('allow always stores', 'a grant for this exact command' + (a.cwd ? ' in ' + a.cwd : '') +
        ' (OpenClaw allowlist); its later runs need nobody', { 'data-field': 'stores' }));
    }
    dl.append(...field('request hash', e.requestHash, { class: 'mono hash', 'data-field': 'hash' }));
    // The inbox id: the one `inbox approve`, serve's log line and /api/requests/<id> use.
    dl.append(...field('id', e.id, { class: 'mono', 'data-field': 'id' }));
    const pick = el('input', { type: 'checkbox', class: 'pick', 'aria-label': 'Select for bulk deny: ' + what });
    const node = el('li', { class: 'card pending', id: 'r-' + e.id, tabindex: '0', 'data-id': e.id },
      el('div', { class: 'card-head' },
        pick,
        el('span', { class: 'badge state' }, stateLabel(e.state)),
        el('span', { class: 'badge cat' }, vis(e.category)),
        el('span', { class: 'src' }, vis(e.source + ' · agent ' + e.agentId + (e.sessionKey ? ' · ' + e.sessionKey : ''))),
        countdown),
      el('h2', {}, SG.actionTitle(a)),
      warn,
      look,
      whatBlock(a),
      el('div', { class: 'label why' }, 'Why it needs you'),
      reasons,
      dl,
      el('div', { class: 'actions' }, btnOnce, btnAlways, el('div', { class: 'deny-group' }, reason, btnDeny)),
      status);
    return { entry: e, node, done: false, countdown, status, reason, pick };
  }


  return { build, stateLabel };
})();
