#!/usr/bin/env node
/**
 * Full read of a 100,000-row x 15-attribute HR export through the file connector (CSV and JSON), then a delta
 * with nothing changed and a delta after 1,000 rows changed. Prints JSON: rows/s and the reading process's peak
 * RSS. Needs the build (`npx tsc -p tsconfig.json`).
 *
 * Usage: node bench/connectors/file-read.js [rows] [--format csv|json] [--profile DIR]
 *   --format   measure one format only
 *   --profile  write a V8 CPU profile of each measurement into DIR (open in Chrome DevTools)
 *
 * Each measurement runs in a fresh child process, so the generator's memory does not count in its peak RSS.
 */
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const args = process.argv.slice(2);
function option(name) {
  const i = args.indexOf(name);
  if (i < 0) return undefined;
  const value = args[i + 1];
  args.splice(i, 2);
  return value;
}
const child = args[0] === '--child';
const FORMATS = child ? [] : (option('--format') ?? 'csv,json').split(',');
const PROFILE = child ? undefined : option('--profile');
const ROWS = child ? 0 : Number(args[0] ?? 100000);
const dist = path.resolve(__dirname, '../../dist/lib/connectors');
// The file connector works only under its roots: this bench's folders are temporary ones.
process.env.Connectors__File__Roots ??= os.tmpdir();

function columns(i) {
  const id = `E${String(i).padStart(6, '0')}`;
  return {
    employeeId: id,
    givenName: `Given${i}`,
    sn: `Surname ${i % 977}`,
    displayName: `Given${i} Surname ${i % 977}`,
    mail: `user${i}@example.test`,
    department: `Dept ${i % 50}`,
    title: i % 7 ? 'Engineer' : 'Manager, "Senior"',
    company: 'Contoso Ltd',
    office: `Building ${i % 12}`,
    telephoneNumber: `+1 555 ${String(i).padStart(7, '0')}`,
    city: i % 3 ? 'Zürich' : 'São Paulo',
    country: i % 3 ? 'CH' : 'BR',
    employeeType: i % 10 ? 'Employee' : 'Contractor',
    manager: i > 0 ? `E${String(Math.floor(i / 10)).padStart(6, '0')}` : '',
    proxyAddresses: `smtp:user${i}@example.test;smtp:alias${i}@example.test`,
  };
}

function csvField(v) {
  return /[",\n\r]/.test(v) ? '"' + v.replace(/"/g, '""') + '"' : v;
}

function generate(dir, format, changedEvery = 0) {
  const file = path.join(dir, format === 'csv' ? 'users.csv' : 'users.json');
  const fd = fs.openSync(file, 'w');
  let buf = [];
  const flush = () => {
    fs.writeSync(fd, buf.join(''));
    buf = [];
  };
  const header = Object.keys(columns(0));
  if (format === 'csv') buf.push(header.join(',') + '\n');
  else buf.push('[\n');
  for (let i = 0; i < ROWS; i++) {
    const c = columns(i);
    if (changedEvery && i % changedEvery === 0) c.title = 'Changed';
    if (format === 'csv') buf.push(header.map((h) => csvField(c[h])).join(',') + '\n');
    else {
      const o = { ...c, proxyAddresses: c.proxyAddresses.split(';'), manager: c.manager || null };
      buf.push((i ? ',\n' : '') + JSON.stringify(o));
    }
    if (buf.length >= 5000) flush();
  }
  if (format === 'json') buf.push('\n]\n');
  flush();
  fs.closeSync(fd);
  return fs.statSync(file).size;
}

async function measure(mode, dir, format, watermarkFile) {
  const { createCustomConnector } = require(path.join(dist, 'custom.js'));
  const c = createCustomConnector({
    implementation: 'file',
    settings: {
      path: path.join(dir, 'data'),
      format,
      anchorColumn: 'employeeId',
      multiValueColumns: ['proxyAddresses'],
      referenceColumns: { manager: 'User' },
      stateDirectory: path.join(dir, 'state'),
    },
  });
  const t0 = process.hrtime.bigint();
  const cpu0 = process.cpuUsage();
  let objects = 0;
  let errors = 0;
  let pages = 0;
  let watermark;
  if (mode === 'full') {
    for await (const page of c.fullImport({ pageSize: 1000 })) {
      objects += page.objects.length;
      errors += page.errors.length;
      pages++;
      if (page.watermark) watermark = page.watermark;
    }
    fs.writeFileSync(watermarkFile, watermark);
  } else {
    for await (const page of c.deltaImport(fs.readFileSync(watermarkFile, 'utf8'), { pageSize: 1000 })) {
      objects += page.changes.length;
      errors += page.errors.length;
      pages++;
      if (page.nextWatermark) watermark = page.nextWatermark;
    }
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  // cpuSeconds beside wall seconds: on a shared machine the wall time includes waiting for a core.
  return {
    seconds: +seconds.toFixed(3),
    cpuSeconds: +((cpu.user + cpu.system) / 1e6).toFixed(3),
    objects,
    errors,
    pages,
    peakRssMB: +(process.resourceUsage().maxRSS / 1024).toFixed(1),
  };
}

async function main() {
  if (child) {
    const [, mode, dir, format, wm] = args;
    process.stdout.write(JSON.stringify(await measure(mode, dir, format, wm)));
    return;
  }
  const results = { rows: ROWS, attributes: 15, node: process.version, cpus: os.cpus().length, loadAverage: os.loadavg()[0], runs: [] };
  if (PROFILE) fs.mkdirSync(PROFILE, { recursive: true });
  for (const format of FORMATS) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-file-'));
    try {
      fs.mkdirSync(path.join(dir, 'data'));
      const bytes = generate(path.join(dir, 'data'), format);
      const wm = path.join(dir, 'watermark');
      const run = (mode, name) => {
        const profile = PROFILE ? ['--cpu-prof', '--cpu-prof-dir', path.resolve(PROFILE), '--cpu-prof-name', `${format}-${name}.cpuprofile`] : [];
        const r = spawnSync(process.execPath, [...profile, __filename, '--child', mode, dir, format, wm], { encoding: 'utf8' });
        if (r.status !== 0) throw new Error(r.stderr);
        return JSON.parse(r.stdout);
      };
      const full = run('full', 'fullImport');
      const unchanged = run('delta', 'deltaNothingChanged');
      // 1,000 rows changed: rewrite the file with every 100th row's title changed.
      generate(path.join(dir, 'data'), format, ROWS / 1000);
      const changed = run('delta', 'delta1000Changed');
      results.runs.push({
        format,
        fileMB: +(bytes / 1048576).toFixed(1),
        fullImport: { ...full, rowsPerSecond: Math.round(full.objects / full.seconds), rowsPerCpuSecond: Math.round(full.objects / full.cpuSeconds) },
        deltaNothingChanged: unchanged,
        delta1000Changed: changed,
      });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
  console.log(JSON.stringify(results, null, 2));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
