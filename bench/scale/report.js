'use strict';
/**
 * The scale bench's report (bench/scale/scale.js): the goals of issue 21 checked per size and across sizes, a
 * markdown table (metrics in rows, sizes in columns) and a PNG plot (time per object and peak RSS against N, log
 * x axis) drawn as SVG and screenshot with playwright-core and Debian's Chromium (no new dependency).
 */
const fs = require('node:fs');
const path = require('node:path');

const GOALS = {
  fullImportDirectorySecondsAt1M: 720,
  engineRssMB: 1024,
  listP95Ms: 30,
  searchP95Ms: 100,
  startupServingSeconds: 30,
  deltaSeconds: 60,
  linearRatio1Mto100k: 1.25,
};
const p95 = (r, name) => r.phases?.meshQueries?.scenarios?.find((s) => s.scenario.startsWith(name))?.p95Ms ?? null;
const check = (value, max) => ({ value, max, met: value === null || value === undefined ? null : value <= max });

/** The goals for one size. The time goals are stated at 1M; at smaller sizes they show the margin left. */
function goals(r) {
  return {
    engineRssUnder1GB: check(r.peakRssMB?.engine ?? null, GOALS.engineRssMB),
    listP95: check(p95(r, 'list'), GOALS.listP95Ms),
    threeCriteriaSearchP95: check(p95(r, 'advanced'), GOALS.searchP95Ms),
    startupServing: check(r.phases?.startup?.servingSeconds ?? null, GOALS.startupServingSeconds),
    delta1Percent: check(r.phases?.delta1Percent?.seconds ?? null, GOALS.deltaSeconds),
    ...(r.users >= 1000000 ? { fullImportDirectory: check(r.phases?.fullImportDirectory?.seconds ?? null, GOALS.fullImportDirectorySecondsAt1M) } : {}),
  };
}

/** ms per object of the two full imports together. */
const fullMsPerObject = (r) => {
  const a = r.phases?.fullImportDirectory;
  const b = r.phases?.fullImportHr;
  return a && b ? +(((a.seconds + b.seconds) * 1000) / (a.objects + b.objects)).toFixed(3) : null;
};

/** Linear cost: time per object at 1M against 100k (when both were run). */
function linearity(results) {
  const at = (n) => results.find((r) => r.users === n);
  const a = at(100000);
  const b = at(1000000);
  if (!a || !b || fullMsPerObject(a) === null || fullMsPerObject(b) === null) return null;
  const ratio = +(fullMsPerObject(b) / fullMsPerObject(a)).toFixed(2);
  return {
    msPerObjectAt100k: fullMsPerObject(a),
    msPerObjectAt1M: fullMsPerObject(b),
    ratio,
    max: GOALS.linearRatio1Mto100k,
    met: ratio <= GOALS.linearRatio1Mto100k,
  };
}

const fmt = (x) => (x === null || x === undefined ? '–' : typeof x === 'number' ? String(x) : x);
const ph = (r, name, f) => (r.phases?.[name] ? f(r.phases[name]) : null);

function table(results) {
  const rows = [
    ['users', (r) => r.users],
    ['groups / memberships', (r) => (r.generation ? `${r.generation.groups} / ${r.generation.memberships}` : null)],
    ['full import directory s (objects/s)', (r) => ph(r, 'fullImportDirectory', (p) => `${p.seconds} (${p.objectsPerSecond})`)],
    ['full import HR s (objects/s)', (r) => ph(r, 'fullImportHr', (p) => `${p.seconds} (${p.objectsPerSecond})`)],
    ['full imports ms/object', fullMsPerObject],
    ['unchanged re-import s (objects/s)', (r) => ph(r, 'reimportUnchanged', (p) => `${p.seconds} (${p.objectsPerSecond})`)],
    ['1 % delta s (objects)', (r) => ph(r, 'delta1Percent', (p) => `${p.seconds} (${p.objects})`)],
    ['export to slapd s (objects/s)', (r) => ph(r, 'exportToTarget', (p) => `${p.seconds} (${p.objectsPerSecond})`)],
    [
      'service CPU s, full imports',
      (r) => (r.phases?.fullImportHr ? +(r.phases.fullImportDirectory.serviceCpuSeconds + r.phases.fullImportHr.serviceCpuSeconds).toFixed(1) : null),
    ],
    [
      'Azurite CPU s, full imports',
      (r) => (r.phases?.fullImportHr ? +(r.phases.fullImportDirectory.azuriteCpuSeconds + r.phases.fullImportHr.azuriteCpuSeconds).toFixed(1) : null),
    ],
    ['engine peak RSS MB', (r) => r.peakRssMB?.engine],
    ['Azurite peak RSS MB', (r) => r.peakRssMB?.azuriteTable],
    ['data folder MB', (r) => r.dataFolderMB],
    [
      'entities after full imports / at end (method)',
      (r) => (r.entities ? `${r.entities.total} / ${r.entitiesAtEnd?.total ?? '–'} (${r.entities.method.startsWith('scan') ? 'scan' : 'estimate'})` : null),
    ],
    ['start-up: health / serving s', (r) => ph(r, 'startup', (p) => `${p.healthSeconds} / ${p.servingSeconds}`)],
    ['engine restart, storage running: health / serving s', (r) => ph(r, 'engineRestart', (p) => `${p.healthSeconds} / ${p.servingSeconds}`)],
    ['list p95 ms', (r) => p95(r, 'list')],
    ['anchor search p95 ms', (r) => p95(r, 'anchor')],
    ['3-criteria search p95 ms', (r) => p95(r, 'advanced')],
    ['detail p95 ms', (r) => p95(r, 'detail')],
    ['floor s (entities/s)', (r) => (r.floor ? `${r.floor.seconds} (${r.floor.entitiesPerSecond})` : null)],
    ['full imports ÷ floor', (r) => r.floor?.ratioFullImportsToFloor],
    ['load average (start)', (r) => r.loadAverageAtStart?.[0]],
    [
      'goals met',
      (r) => {
        const g = Object.entries(r.goals ?? goals(r)).filter(([, v]) => v.met !== null);
        return `${g.filter(([, v]) => v.met).length}/${g.length}${
          g.some(([, v]) => !v.met)
            ? ` (not: ${g
                .filter(([, v]) => !v.met)
                .map(([k]) => k)
                .join(', ')})`
            : ''
        }`;
      },
    ],
    ['failures', (r) => (r.failures?.length ? r.failures.map((f) => f.phase).join(', ') : 'none')],
  ];
  const head = `| | ${results.map((r) => `${r.users / 1000}k`).join(' | ')} |\n|---|${results.map(() => '---:').join('|')}|\n`;
  const body = rows.map(([name, f]) => `| ${name} | ${results.map((r) => fmt(f(r))).join(' | ')} |`).join('\n');
  const lin = linearity(results);
  return `${head}${body}\n${lin ? `\nLinear cost: ${lin.msPerObjectAt1M} ms/object at 1M vs ${lin.msPerObjectAt100k} at 100k = ${lin.ratio}x (goal <= ${lin.max}: ${lin.met ? 'met' : 'not met'})\n` : ''}`;
}

/** An SVG line chart, log x axis. `series`: [{ name, color, points: [[x, y]] }]. */
function chart(title, yLabel, series, w = 560, h = 380) {
  const pad = { l: 64, r: 16, t: 36, b: 48 };
  const pts = series.flatMap((s) => s.points).filter(([, y]) => y !== null && y !== undefined);
  if (!pts.length) return `<svg width="${w}" height="${h}"><text x="20" y="30">${title}: no data</text></svg>`;
  const xs = pts.map(([x]) => Math.log10(x));
  let [x0, x1] = [Math.floor(Math.min(...xs)), Math.ceil(Math.max(...xs))];
  if (x0 === x1) x1 = x0 + 1;
  const y1 = Math.max(...pts.map(([, y]) => y)) * 1.1 || 1;
  const X = (x) => pad.l + ((Math.log10(x) - x0) / (x1 - x0)) * (w - pad.l - pad.r);
  const Y = (y) => h - pad.b - (y / y1) * (h - pad.t - pad.b);
  let svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" font-family="sans-serif" font-size="12">`;
  svg += `<text x="${w / 2}" y="20" text-anchor="middle" font-size="14" font-weight="bold">${title}</text>`;
  for (let e = x0; e <= x1; e++) {
    for (const m of [1, 2, 5]) {
      const x = m * 10 ** e;
      if (Math.log10(x) > x1) break;
      const px = X(x);
      svg += `<line x1="${px}" x2="${px}" y1="${pad.t}" y2="${h - pad.b}" stroke="#ddd"/><text x="${px}" y="${h - pad.b + 16}" text-anchor="middle">${x >= 1e6 ? `${x / 1e6}M` : `${x / 1e3}k`}</text>`;
    }
  }
  for (let k = 0; k <= 5; k++) {
    const y = (y1 * k) / 5;
    svg += `<line x1="${pad.l}" x2="${w - pad.r}" y1="${Y(y)}" y2="${Y(y)}" stroke="#eee"/><text x="${pad.l - 6}" y="${Y(y) + 4}" text-anchor="end">${+y.toPrecision(3)}</text>`;
  }
  svg += `<text x="${w / 2}" y="${h - 10}" text-anchor="middle">users (log scale)</text>`;
  svg += `<text transform="translate(16 ${h / 2}) rotate(-90)" text-anchor="middle">${yLabel}</text>`;
  series.forEach((s, i) => {
    const p = s.points.filter(([, y]) => y !== null && y !== undefined).sort((a, b) => a[0] - b[0]);
    if (p.length) svg += `<polyline fill="none" stroke="${s.color}" stroke-width="2" points="${p.map(([x, y]) => `${X(x)},${Y(y)}`).join(' ')}"/>`;
    for (const [x, y] of p) svg += `<circle cx="${X(x)}" cy="${Y(y)}" r="3.5" fill="${s.color}"/>`;
    svg += `<rect x="${pad.l + 10}" y="${pad.t + 6 + i * 16}" width="10" height="10" fill="${s.color}"/><text x="${pad.l + 24}" y="${pad.t + 15 + i * 16}">${s.name}</text>`;
  });
  return svg + '</svg>';
}

function html(results) {
  const by = (f) => results.map((r) => [r.users, f(r)]);
  const perObject = (name) => by((r) => r.phases?.[name]?.msPerObject ?? null);
  const left = chart('Time per object', 'ms per object', [
    { name: 'full import, directory', color: '#1f77b4', points: perObject('fullImportDirectory') },
    { name: 'full import, HR', color: '#ff7f0e', points: perObject('fullImportHr') },
    { name: 'unchanged re-import', color: '#2ca02c', points: perObject('reimportUnchanged') },
    { name: 'export to slapd', color: '#d62728', points: perObject('exportToTarget') },
  ]);
  const right = chart('Peak RSS', 'MB', [
    { name: 'engine', color: '#9467bd', points: by((r) => r.peakRssMB?.engine ?? null) },
    { name: 'Azurite (table)', color: '#8c564b', points: by((r) => r.peakRssMB?.azuriteTable ?? null) },
    { name: 'goal: engine 1 GB', color: '#bbb', points: by(() => 1024) },
  ]);
  const dates = [...new Set(results.map((r) => r.date))].join(', ');
  return `<!doctype html><html><body style="margin:0;background:#fff"><div id="plot" style="display:inline-block;padding:8px">${left}${right}<div style="font:12px sans-serif;color:#555;padding:4px 8px">npm run bench:scale, ${dates}; sizes ${results.map((r) => r.users).join(', ')}</div></div></body></html>`;
}

/** A PNG of the plot with playwright-core and /usr/bin/chromium; false (and why) when that is not possible. */
async function plot(results, file) {
  const { chromium } = require('playwright-core');
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  try {
    const page = await browser.newPage({ viewport: { width: 1200, height: 460 } });
    await page.setContent(html(results));
    await page.locator('#plot').screenshot({ path: file });
  } finally {
    await browser.close();
  }
}

/** The results saved in `dir` (the per-size JSON of the latest date for each size), or the `files` listed. */
function load(dir, files) {
  const names = files ? files.split(',').map((f) => f.trim()) : fs.readdirSync(dir).filter((f) => /^\d{4}-\d{2}-\d{2}-\d+\.json$/.test(f));
  const bySize = new Map();
  for (const f of names.sort()) {
    const r = JSON.parse(fs.readFileSync(path.isAbsolute(f) ? f : path.join(dir, f), 'utf8'));
    bySize.set(r.users, r);
  }
  return [...bySize.values()].sort((a, b) => a.users - b.users);
}

async function finish(results, pngFile, log) {
  process.stderr.write(`\n${table(results)}\n`);
  try {
    await plot(results, pngFile);
    log(`plot: ${pngFile}`);
  } catch (err) {
    log(`no plot: ${err.message.split('\n')[0]}`);
  }
}

module.exports = { GOALS, goals, linearity, table, html, plot, load, finish };
