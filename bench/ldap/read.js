'use strict';
// Child process: the connector's full read of every entry (pages of 1000), time and this process's peak RSS.
require('./ts-register');
const { LdapConnector, closeParkedSearches } = require('../../lib/connectors/ldap');

(async () => {
  const cfg = JSON.parse(process.argv[2]);
  const c = new LdapConnector('ldap', cfg);
  const t0 = process.hrtime.bigint();
  let objects = 0;
  let pages = 0;
  let memberships = 0;
  for await (const page of c.fullImport({ pageSize: 1000 })) {
    pages++;
    objects += page.objects.length;
    for (const o of page.objects) memberships += o.references?.member?.length ?? 0;
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  await c.close();
  await closeParkedSearches();
  process.stdout.write(JSON.stringify({ objects, pages, memberships, seconds, peakRssMB: Math.round(process.resourceUsage().maxRSS / 1024) }));
})().catch((err) => {
  console.error(err);
  process.exit(1);
});
