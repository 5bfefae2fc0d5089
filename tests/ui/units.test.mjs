// The console's pure modules, straight from src/api/ui/web/js (no browser, no server): the
// Prometheus parser, histogram quantiles, the history's rates / increases / quantiles (resets,
// series that appear late, gaps) and the formatters.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { formatBytes, formatDuration, formatPercent, formatRelative, formatSeconds, modelKey } from '../../src/api/ui/web/js/format.js';
import { History } from '../../src/api/ui/web/js/history.js';
import { histogramQuantile, labelsMatch, parsePrometheus } from '../../src/api/ui/web/js/prom.js';

const exposition = (lines) => parsePrometheus(`${lines.join('\n')}\n`);

describe('prom.js', () => {
  it('parses samples, label escapes, special values and types; skips malformed lines', () => {
    const { types, samples } = exposition([
      '# HELP rustycage_x_total A counter.',
      '# TYPE rustycage_x_total counter',
      'rustycage_x_total{model="a",route="/v1/\\"q\\"\\\\x\\n"} 12',
      'rustycage_up 1 1700000000000',
      'rustycage_h_bucket{le="+Inf"} 3',
      'rustycage_nan NaN',
      'broken{model="a" 1',
      'also broken',
      'rustycage_neg -2.5e-3',
    ]);
    assert.equal(types.get('rustycage_x_total'), 'counter');
    assert.deepEqual(samples, [
      { name: 'rustycage_x_total', labels: { model: 'a', route: '/v1/"q"\\x\n' }, value: 12 },
      { name: 'rustycage_up', labels: {}, value: 1 },
      { name: 'rustycage_h_bucket', labels: { le: '+Inf' }, value: 3 },
      { name: 'rustycage_nan', labels: {}, value: NaN },
      { name: 'rustycage_neg', labels: {}, value: -0.0025 },
    ]);
  });

  it('matches labels by value, list, RegExp and function', () => {
    const l = { model: 'demo', status: '404' };
    assert.ok(labelsMatch(l, { model: 'demo' }));
    assert.ok(labelsMatch(l, { status: /^4/, model: ['x', 'demo'] }));
    assert.ok(labelsMatch(l, { status: (s) => Number(s) >= 400 }));
    assert.ok(!labelsMatch(l, { model: 'other' }));
    assert.ok(!labelsMatch(l, { tier: 'host' }), 'a missing label is empty');
  });

  it('computes histogram quantiles as Prometheus does', () => {
    const b = [
      { le: 0.1, count: 10 },
      { le: 0.2, count: 20 },
      { le: Infinity, count: 20 },
    ];
    assert.equal(histogramQuantile(0.5, b), 0.1);
    assert.ok(Math.abs(histogramQuantile(0.75, b) - 0.15) < 1e-12);
    assert.equal(histogramQuantile(1, b), 0.2);
    assert.ok(Math.abs(histogramQuantile(0.25, b) - 0.05) < 1e-12, 'the first bucket interpolates from 0');
    assert.equal(histogramQuantile(0.99, [{ le: 1, count: 1 }, { le: Infinity, count: 5 }]), 1, 'the +Inf bucket answers its lower bound');
    assert.equal(histogramQuantile(0.5, [{ le: Infinity, count: 0 }]), null, 'empty');
    assert.equal(histogramQuantile(0.5, []), null);
  });
});

describe('history.js', () => {
  const at = (h, t, lines) => h.push(t * 1000, exposition(lines));

  it('turns counters into per-second rates, across resets and late series', () => {
    const h = new History();
    at(h, 0, ['c_total{model="a"} 10']);
    at(h, 2, ['c_total{model="a"} 14']);
    at(h, 4, ['c_total{model="a"} 2', 'c_total{model="b"} 6']); // a reloaded, b loaded
    at(h, 6, ['c_total{model="b"} 8']); // a unloaded
    const all = h.rateSeries('c_total').values.get('');
    assert.deepEqual(all, [null, 2, 4, 1]);
    const byModel = h.rateSeries('c_total', { by: 'model' });
    assert.deepEqual(byModel.groups, ['a', 'b']);
    assert.deepEqual(byModel.values.get('a'), [null, 2, 1, 0]);
    assert.deepEqual(byModel.values.get('b'), [null, 0, 3, 1]);
    assert.deepEqual(h.times(), [0, 2, 4, 6]);
  });

  it('sums increases over a window and gauges with gaps', () => {
    const h = new History();
    for (let t = 0; t <= 10; t++) at(h, t, [`c_total{s="x"} ${t * 3}`, `c_total{s="y"} ${t}`, ...(t % 2 ? [] : [`g{m="a"} ${t}`])]);
    assert.equal(h.increase('c_total', { windowMs: 4000 }).get(''), 16);
    assert.deepEqual([...h.increase('c_total', { by: 's', windowMs: 60_000 })], [['x', 30], ['y', 10]]);
    assert.deepEqual(h.gaugeSeries('g').values.get('').slice(0, 4), [0, null, 2, null]);
    assert.equal(h.latestSum('c_total').get(''), 40);
    assert.equal(h.has('g'), true);
    assert.equal(h.has('nothing'), false);
  });

  it('computes quantiles over a sliding window; null where nothing was observed', () => {
    const h = new History();
    const hist = (n1, n2) => [`l_bucket{le="0.1"} ${n1}`, `l_bucket{le="1"} ${n1 + n2}`, `l_bucket{le="+Inf"} ${n1 + n2}`];
    at(h, 0, hist(0, 0));
    at(h, 1, hist(10, 0)); // ten fast observations
    at(h, 2, hist(10, 0)); // none
    at(h, 3, hist(10, 10)); // ten slow ones
    const q = h.quantileSeries('l', [0.5], { windowMs: 1000 }).get(0.5);
    assert.equal(q[0], null);
    assert.ok(Math.abs(q[1] - 0.05) < 1e-12, `${q[1]}`);
    assert.equal(q[2], null, 'no observation in the window');
    assert.ok(Math.abs(q[3] - 0.55) < 1e-12, `${q[3]}`);
    assert.ok(Math.abs(h.recentQuantile('l', 0.5, { windowMs: 60_000 }) - 0.1) < 1e-12);
    assert.deepEqual(h.buckets('l'), [{ le: 0.1, count: 10 }, { le: 1, count: 20 }, { le: Infinity, count: 20 }]);
  });

  it('forgets scrapes older than its span', () => {
    const h = new History({ spanMs: 5000 });
    for (let t = 0; t < 20; t++) at(h, t, ['g 1']);
    assert.equal(h.size, 6);
    assert.equal(h.times()[0], 14);
  });
});

describe('format.js', () => {
  it('writes sizes, times and shares for people', () => {
    assert.equal(formatBytes(512), '512 B');
    assert.equal(formatBytes(1536), '1.5 KiB');
    assert.equal(formatBytes(20 * 2 ** 30), '20.0 GiB');
    assert.equal(formatBytes(null), '—');
    assert.equal(formatSeconds(0.0004), '400 µs');
    assert.equal(formatSeconds(0.0125), '12.5 ms');
    assert.equal(formatSeconds(2.5), '2.5 s');
    assert.equal(formatDuration(3725), '1 h 2 min');
    assert.equal(formatDuration(59), '59 s');
    assert.equal(formatPercent(0.5), '50 %');
    assert.equal(formatPercent(0.0001), '< 0.1 %');
    assert.equal(formatRelative(10_000, 40_000), '30 s ago');
    assert.equal(formatRelative(100_000, 40_000), 'in 1 min');
    assert.equal(modelKey('demo:latest'), 'demo');
    assert.equal(modelKey('hf.co/a/b:Q4_K_M'), 'hf.co/a/b:Q4_K_M');
  });
});
