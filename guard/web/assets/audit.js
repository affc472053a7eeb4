// One record of this guard's audit log (`/audit?seq=N`, linked from any fleet guard's
// History with `&hash=H`, the hash the fleet row names): the record as logged, whether the
// line still has that hash, and what the chain says about it.
'use strict';
(() => {
  const { vis, api } = SG;
  const set = (id, text) => { const n = document.getElementById(id); n.textContent = ''; n.appendChild(vis(text)); };

  function chainText(c) {
    if (!c) return '—';
    const parts = [c.intact ? 'intact from seq ' + c.from + ' up to this record' : 'BROKEN before or at this record'];
    parts.push(c.keyed ? 'sealed with the audit key' : 'NOT keyed (proves only that the file agrees with itself)');
    parts.push(c.anchored ? 'anchored by the sealed head' : 'not anchored by the sealed head');
    if (c.broken) parts.push('first break: ' + c.broken.file + ' line ' + c.broken.line + ': ' + c.broken.what);
    return parts.join(' · ');
  }

  (async () => {
    if (!(await SG.session())) return;
    const q = new URLSearchParams(location.search);
    const seq = q.get('seq') || '';
    const claimed = q.get('hash') || '';
    document.getElementById('audit').hidden = false;
    set('title', 'Audit record #' + seq);
    const out = document.getElementById('verdict');
    if (!/^[0-9]+$/.test(seq)) { out.textContent = 'No record number given.'; out.className = 'verify bad'; return; }
    const r = await api('GET', '/api/audit/' + seq);
    if (!r.ok) {
      out.textContent = r.status === 404 ? 'This guard\'s audit log has no record #' + seq + '.' : 'Could not read the record: ' + (r.data.message || r.status);
      out.className = 'verify bad';
      return;
    }
    const d = r.data;
    set('kind', d.record.kind);
    set('when', d.record.ts);
    set('hash', d.hash);
    set('claimed', claimed ? claimed + (claimed === d.hash ? ' (the same)' : ' (DIFFERENT: the line is not the one the deciding guard wrote, or the row was changed)') : '—');
    set('chain', chainText(d.chain));
    // The exact line (its SHA-256 is the hash above), hidden characters marked.
    set('record', d.line);
    const good = d.chain.intact && d.chain.anchored && (!claimed || claimed === d.hash);
    out.textContent = good ? '✔ This guard\'s log holds this record, and its chain vouches for it.' :
      '✘ Not vouched for: see the chain and hashes below.';
    out.className = 'verify ' + (good ? 'good' : 'bad');
    out.setAttribute('data-ok', good ? 'true' : 'false');
  })();
})();
