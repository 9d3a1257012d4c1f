'use strict';
/**
 * Deterministic LDIF for the directory benchmark: `users` inetOrgPersons under ou=people (manager = user
 * floor(i/10), so a tree of managers) and `groups` groupOfNames under ou=groups, user i in group i % groups
 * (about `users` memberships in all). memberOf is written too, because slapadd bypasses the memberof overlay.
 */
const fs = require('node:fs');

/** The DN of user i, and of group g, as written by {@link generate}. */
const userDn = (i, suffix = 'dc=example,dc=com') => `uid=u${String(i).padStart(6, '0')},ou=people,${suffix}`;
const groupDn = (g, suffix = 'dc=example,dc=com') => `cn=g${String(g).padStart(4, '0')},ou=groups,${suffix}`;

function generate(file, { suffix = 'dc=example,dc=com', users = 100000, groups = 1000 } = {}) {
  const out = fs.createWriteStream(file);
  let buf = '';
  const flush = () => {
    out.write(buf);
    buf = '';
  };
  for (let i = 0; i < users; i++) {
    buf +=
      `dn: ${userDn(i, suffix)}\nobjectClass: inetOrgPerson\nuid: u${String(i).padStart(6, '0')}\ncn: User ${i}\nsn: Surname${i}\ngivenName: Given${i}\n` +
      `mail: u${i}@example.test\nemployeeNumber: ${100000 + i}\ntitle: Title ${i % 50}\ndepartmentNumber: D${i % 100}\ntelephoneNumber: +1 555 ${String(i).padStart(7, '0')}\n` +
      (i > 0 ? `manager: ${userDn(Math.floor(i / 10), suffix)}\n` : '') +
      `memberOf: ${groupDn(i % groups, suffix)}\n\n`;
    if (buf.length > 1 << 20) flush();
  }
  for (let g = 0; g < groups; g++) {
    buf += `dn: ${groupDn(g, suffix)}\nobjectClass: groupOfNames\ncn: g${String(g).padStart(4, '0')}\n`;
    for (let i = g; i < users; i += groups) buf += `member: ${userDn(i, suffix)}\n`;
    buf += '\n';
    if (buf.length > 1 << 20) flush();
  }
  flush();
  return new Promise((resolve, reject) => out.end((err) => (err ? reject(err) : resolve())));
}

module.exports = { generate, userDn, groupDn };
