'use strict';
// Deterministic mesh objects for the mesh-query benchmarks: `count` objects, 20 attributes each (one of them
// multi-valued, one present on half the objects only), 90% User and 10% Contact, with a contribution per
// attribute like the sync engine writes. Same seed, same objects.

const FIRST = ['Ada', 'Alan', 'Grace', 'Edsger', 'Barbara', 'Donald', 'Frances', 'John', 'Margaret', 'Ken', 'Dennis', 'Radia', 'Tim', 'Vint', 'Leslie', 'Niklaus', 'Tony', 'Shafi', 'Whitfield', 'Hedy'];
const LAST = ['Lovelace', 'Turing', 'Hopper', 'Dijkstra', 'Liskov', 'Knuth', 'Allen', 'Backus', 'Hamilton', 'Thompson', 'Ritchie', 'Perlman', 'Berners-Lee', 'Cerf', 'Lamport', 'Wirth', 'Hoare', 'Goldwasser', 'Diffie', 'Lamarr'];
const DEPTS = Array.from({ length: 20 }, (_, i) => `Department ${String.fromCharCode(65 + i)}`);
const TITLES = Array.from({ length: 50 }, (_, i) => `Title ${i}`);
const CITIES = Array.from({ length: 100 }, (_, i) => `City ${i}`);
const COUNTRIES = ['FR', 'DE', 'US', 'GB', 'JP', 'BR', 'IN', 'ES', 'IT', 'CA'];
const GROUPS = Array.from({ length: 30 }, (_, i) => `grp-${i}`);
const FLAGS = ['true', 'false', 'yes', 'no', '1', '0'];

function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function guid(r) {
  const h = () => Math.floor(r() * 0x10000).toString(16).padStart(4, '0');
  return `${h()}${h()}-${h()}-8${h().slice(1)}-${(8 + Math.floor(r() * 4)).toString(16)}${h().slice(1)}-${h()}${h()}${h()}`;
}

/** `count` MeshObjects (lib/sync/model.ts shape) from `seed`, contributed by `connectorId`. */
function generate(count, connectorId, seed = 42) {
  const r = rng(seed);
  const pick = (a) => a[Math.floor(r() * a.length)];
  const at = '2026-01-15T08:00:00.000Z';
  const out = [];
  for (let i = 0; i < count; i++) {
    const g = pick(FIRST);
    const s = pick(LAST);
    const n = String(i).padStart(6, '0');
    const anchor = `${g}.${s}.${n}`;
    const values = {
      employeeId: `E${n}`,
      givenName: g,
      sn: s,
      displayName: `${g} ${s}`,
      mail: `${g}.${s}.${n}@example.test`.toLowerCase(),
      userPrincipalName: `${g.toLowerCase()}${n}@corp.example.test`,
      department: pick(DEPTS),
      title: pick(TITLES),
      company: `Company ${Math.floor(r() * 5)}`,
      city: pick(CITIES),
      country: pick(COUNTRIES),
      telephoneNumber: `+33 1 ${String(Math.floor(r() * 1e8)).padStart(8, '0')}`,
      mobile: `+33 6 ${String(Math.floor(r() * 1e8)).padStart(8, '0')}`,
      employeeType: pick(['Employee', 'Contractor', 'Intern', 'Vendor']),
      costCenter: `CC${Math.floor(r() * 200)}`,
      isActive: pick(FLAGS),
      hireDate: `20${String(10 + Math.floor(r() * 16))}-0${1 + Math.floor(r() * 9)}-1${Math.floor(r() * 9)}`,
      office: `Building ${Math.floor(r() * 50)} / ${Math.floor(r() * 10)}`,
      memberOf: [pick(GROUPS), pick(GROUPS), pick(GROUPS)].filter((v, k, a) => a.indexOf(v) === k),
      description: r() < 0.5 ? `Employee number ${n}` : null,
    };
    const attributes = {};
    const contributions = {};
    for (const [name, value] of Object.entries(values)) {
      if (value === null) continue;
      attributes[name] = { value, sourceConnectorId: connectorId, confidence: 50, updatedOn: at };
      contributions[name] = [{ c: connectorId, r: 'bench-rule', conf: 50, pri: 100, v: value, at }];
    }
    out.push({
      id: guid(r),
      objectType: i % 10 === 9 ? 'Contact' : 'User',
      anchorValue: anchor,
      createdOn: at,
      updatedOn: at,
      attributes,
      contributions,
      links: { [connectorId]: anchor },
      relationships: [],
      pendingReferences: [],
    });
  }
  return out;
}

module.exports = { generate };
