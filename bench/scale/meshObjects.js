'use strict';
/**
 * Generated mesh objects as the scale bench's directory + HR mesh holds them (22 attributes from two
 * connectors: 18 from the directory, 4 from HR; one manager relationship on a tenth of them), for the benches
 * that feed the read model without running imports (readModelLoad.js, readModelApply.js).
 * `meshObject(i, projectedMeshId, consolidate, runId?)`: object i, consolidated with the given build's code.
 */
const DIR = 'a1b2c3d4-0000-4000-8000-00000000d1a0';
const HR = 'a1b2c3d4-0000-4000-8000-000000000hr0';
const RULE_D = 'r-dir-0000-4000-8000-000000000001';
const RULE_H = 'r-hr-00000-4000-8000-000000000002';
const RUN = 'run-0000-0000-4000-8000-00000000001';
const DIR_ATTRS = [
  'givenName',
  'sn',
  'displayName',
  'mail',
  'userPrincipalName',
  'proxyAddresses',
  'department',
  'title',
  'company',
  'city',
  'country',
  'preferredLanguage',
  'telephoneNumber',
  'office',
  'memberOf',
  'mobile',
  'description',
  'isActive',
];
const HR_ATTRS = ['employeeId', 'employeeType', 'costCenter', 'hireDate'];

function value(name, i) {
  switch (name) {
    case 'proxyAddresses':
      return [`SMTP:user${i}@example.com`, `smtp:alias${i}@example.org`];
    case 'memberOf':
      return Array.from({ length: 1 + (i % 4) }, (_, g) => `cn=grp-${(i + g) % 30},ou=groups,dc=example,dc=com`);
    case 'department':
      return `Department ${String.fromCharCode(65 + (i % 20))}`;
    case 'title':
      return `Title ${i % 50}`;
    case 'city':
      return `City ${i % 100}`;
    case 'country':
      return ['FR', 'DE', 'US', 'GB', 'JP'][i % 5];
    case 'isActive':
      return i % 3 ? 'TRUE' : 'FALSE';
    case 'mail':
    case 'userPrincipalName':
      return `user${i}@example.com`;
    case 'employeeId':
      return String(100000 + i);
    default:
      return `${name} ${i}`;
  }
}

function meshObject(i, projectedMeshId, consolidate, run = RUN, at0 = Date.UTC(2026, 0, 1)) {
  const anchor = `User.${String(i).padStart(7, '0')}`;
  const id = projectedMeshId(DIR, anchor);
  const at = new Date(at0 + (i % 3600) * 1000).toISOString();
  const contributions = {};
  for (const a of DIR_ATTRS)
    if (!((a === 'mobile' && i % 10 >= 7) || (a === 'description' && i % 2)))
      contributions[a] = [{ c: DIR, r: RULE_D, conf: 80, pri: 1, v: value(a, i), at, u: run }];
  for (const a of HR_ATTRS) contributions[a] = [{ c: HR, r: RULE_H, conf: 90, pri: 0, v: value(a, i), at, u: run }];
  const o = {
    id,
    objectType: i % 10 ? 'User' : 'Contact',
    anchorValue: anchor,
    createdOn: at,
    createdRun: run,
    createdBy: DIR,
    updatedOn: at,
    attributes: {},
    contributions,
    links: { [DIR]: `cn=${anchor},ou=people,dc=example,dc=com`, [HR]: String(100000 + i) },
    relationships:
      i % 10 === 1 && i > 10
        ? [
            {
              type: 'manager',
              targetId: projectedMeshId(DIR, `User.${String(i - 1).padStart(7, '0')}`),
              targetAnchor: `User.${String(i - 1).padStart(7, '0')}`,
              targetType: 'User',
            },
          ]
        : [],
    pendingReferences: [],
  };
  consolidate(o);
  return o;
}

module.exports = { meshObject, DIR, HR };
