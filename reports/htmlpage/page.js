// The page's only script: the filters. It reads what it filters on from
// the rows' data attributes and writes only textContent, hidden and open,
// so nothing in a row is ever parsed as markup or code.
(function () {
  'use strict';
  var $ = function (id) { return document.getElementById(id); };
  var pairs = Array.prototype.slice.call(document.querySelectorAll('details.pair'));
  var selects = {
    outcome: $('f-outcome'), level: $('f-level'), family: $('f-family'),
    variant: $('f-variant'), run: $('f-run')
  };
  var text = $('f-text');
  var shown = $('shown');
  var none = $('none');
  // What every row is searched on, lower-cased once.
  var haystack = pairs.map(function (p) {
    var name = p.querySelector('.name');
    var rules = p.querySelector('.rules');
    return ((name ? name.textContent : '') + ' ' + (rules ? rules.textContent : '')).toLowerCase();
  });

  function value(s) { return s ? s.value : ''; }

  function matches(p, i, f) {
    var d = p.dataset;
    if (f.outcome === '!pass') {
      if (d.outcome === 'pass' || d.outcome === 'skipped') { return false; }
    } else if (f.outcome && d.outcome !== f.outcome) { return false; }
    if (f.level && d.level !== f.level) { return false; }
    if (f.family && (' ' + d.families + ' ').indexOf(' ' + f.family + ' ') < 0) { return false; }
    if (f.variant && d.variant !== f.variant) { return false; }
    if (f.run && d.run !== f.run) { return false; }
    if (f.text && haystack[i].indexOf(f.text) < 0) { return false; }
    return true;
  }

  function apply() {
    var f = {
      outcome: value(selects.outcome), level: value(selects.level), family: value(selects.family),
      variant: value(selects.variant), run: value(selects.run), text: text.value.trim().toLowerCase()
    };
    var n = 0;
    pairs.forEach(function (p, i) {
      var ok = matches(p, i, f);
      p.hidden = !ok;
      if (ok) { n++; }
    });
    shown.textContent = n + ' of ' + pairs.length + ' pairs shown';
    none.hidden = n !== 0;
  }

  // set sets a filter to v when v is one of its options, else to any.
  function set(s, v) {
    if (!s) { return; }
    s.value = v;
    if (s.value !== v) { s.value = ''; }
  }

  Object.keys(selects).forEach(function (k) {
    if (selects[k]) { selects[k].addEventListener('change', apply); }
  });
  text.addEventListener('input', apply);

  // A count in a summary filters the rows to what it counts.
  Array.prototype.forEach.call(document.querySelectorAll('button.count'), function (b) {
    b.addEventListener('click', function () {
      set(selects.outcome, b.dataset.outcome);
      set(selects.level, b.dataset.level);
      set(selects.family, b.dataset.family);
      set(selects.variant, '');
      set(selects.run, b.dataset.run);
      text.value = '';
      apply();
      $('results').scrollIntoView({ block: 'start' });
    });
  });

  $('b-expand').addEventListener('click', function () {
    pairs.forEach(function (p) { if (!p.hidden) { p.open = true; } });
  });
  $('b-collapse').addEventListener('click', function () {
    pairs.forEach(function (p) { p.open = false; });
  });
  $('b-reset').addEventListener('click', function () {
    Object.keys(selects).forEach(function (k) { set(selects[k], ''); });
    text.value = '';
    apply();
  });

  // A link to a row (page.html#p12) opens it.
  function openTarget() {
    var id = location.hash.slice(1);
    var p = id && document.getElementById(id);
    if (p && p.classList.contains('pair')) {
      p.hidden = false;
      p.open = true;
    }
  }
  window.addEventListener('hashchange', openTarget);

  // A page with failures opens on them: they are what a reader came for,
  // and Reset shows every row.
  if (pairs.some(function (p) { return p.dataset.outcome !== 'pass' && p.dataset.outcome !== 'skipped'; })) {
    set(selects.outcome, '!pass');
  }
  apply();
  openTarget();
}());
