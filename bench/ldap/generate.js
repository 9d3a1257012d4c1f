'use strict';
/**
 * Deterministic LDIF for the directory benchmarks: `users` inetOrgPersons under ou=people (manager = user
 * floor(i/10), so a tree of managers) and groupOfNames under ou=groups. By default `groups` groups, user i in
 * group i % groups (about `users` memberships in all). With `groupSizes` (one size per group), each group's
 * members are a contiguous run of users (wrapping around) laid one after the other, so groups of very different
 * sizes can be had without keeping any membership list in memory. memberOf is written too, because slapadd
 * bypasses the memberof overlay. `extra(i)` adds LDIF lines to user i (e.g. more attributes).
 */
const fs = require('node:fs');

/** The DN of user i, and of group g, as written by {@link generate}. */
const userDn = (i, suffix = 'dc=example,dc=com') => `uid=u${String(i).padStart(6, '0')},ou=people,${suffix}`;
const groupDn = (g, suffix = 'dc=example,dc=com') => `cn=g${String(g).padStart(4, '0')},ou=groups,${suffix}`;

/**
 * The member runs of `groupSizes` over `users` users: group g holds users start[g] .. start[g] + size - 1 (mod
 * users). Layers (a list of group indexes each) are laid out one after the other from their own offset.
 */
function groupRuns(users, groupSizes, layers) {
  const start = new Array(groupSizes.length).fill(0);
  for (const { groups, offset } of layers) {
    let at = offset;
    for (const g of groups) {
      start[g] = at % users;
      at += groupSizes[g];
    }
  }
  return start;
}

/** memberOf of each user, in user order, from the runs (a sweep over the runs' starts and ends). */
function* memberOfSweep(users, groupSizes, start) {
  const events = [];
  for (let g = 0; g < groupSizes.length; g++) {
    const s = start[g];
    const e = s + Math.min(groupSizes[g], users);
    if (e <= users) events.push([s, g, 1], [e, g, -1]);
    else events.push([s, g, 1], [users, g, -1], [0, g, 1], [e - users, g, -1]);
  }
  events.sort((a, b) => a[0] - b[0] || a[2] - b[2]);
  const active = new Set();
  let k = 0;
  for (let i = 0; i < users; i++) {
    while (k < events.length && events[k][0] <= i) {
      const [, g, d] = events[k++];
      if (d > 0) active.add(g);
      else active.delete(g);
    }
    yield active;
  }
}

function generate(file, { suffix = 'dc=example,dc=com', users = 100000, groups = 1000, groupSizes, groupLayers, extra } = {}) {
  const out = fs.createWriteStream(file);
  let buf = '';
  let pending = Promise.resolve();
  const flush = async () => {
    const chunk = buf;
    buf = '';
    // Back-pressure: wait for the stream to drain rather than hold the whole LDIF in memory.
    if (!out.write(chunk)) await new Promise((r) => out.once('drain', r));
  };
  const sized = Array.isArray(groupSizes);
  const nGroups = sized ? groupSizes.length : groups;
  const start = sized ? groupRuns(users, groupSizes, groupLayers ?? [{ groups: groupSizes.map((_, g) => g), offset: 0 }]) : null;
  const memberOf = sized ? memberOfSweep(users, groupSizes, start) : null;
  const body = async () => {
    for (let i = 0; i < users; i++) {
      const of = sized ? [...memberOf.next().value] : [i % groups];
      buf +=
        `dn: ${userDn(i, suffix)}\nobjectClass: inetOrgPerson\nuid: u${String(i).padStart(6, '0')}\ncn: User ${i}\nsn: Surname${i}\ngivenName: Given${i}\n` +
        `mail: u${i}@example.test\nemployeeNumber: ${100000 + i}\ntitle: Title ${i % 50}\ndepartmentNumber: D${i % 100}\ntelephoneNumber: +1 555 ${String(i).padStart(7, '0')}\n` +
        (i > 0 ? `manager: ${userDn(Math.floor(i / 10), suffix)}\n` : '') +
        (extra ? extra(i) : '') +
        of.map((g) => `memberOf: ${groupDn(g, suffix)}\n`).join('') +
        '\n';
      if (buf.length > 1 << 20) await flush();
    }
    for (let g = 0; g < nGroups; g++) {
      buf += `dn: ${groupDn(g, suffix)}\nobjectClass: groupOfNames\ncn: g${String(g).padStart(4, '0')}\n`;
      if (sized) {
        for (let k = 0; k < Math.min(groupSizes[g], users); k++) {
          buf += `member: ${userDn((start[g] + k) % users, suffix)}\n`;
          if (buf.length > 1 << 20) await flush();
        }
      } else for (let i = g; i < users; i += groups) buf += `member: ${userDn(i, suffix)}\n`;
      buf += '\n';
      if (buf.length > 1 << 20) await flush();
    }
    await flush();
  };
  pending = body();
  return pending.then(() => new Promise((resolve, reject) => out.end((err) => (err ? reject(err) : resolve()))));
}

module.exports = { generate, userDn, groupDn, groupRuns };
