#!/usr/bin/env python3
"""Bulk-load users and groups into a running Samba AD DC through Samba's own code (test/support/samba.ts, samLoad).

Opens the DC's sam.ldb with the system session, as samba-tool does, so every entry goes through the DC's module
stack (objectGUID, objectSid, USNs, linked `member` values and their back-links are Samba's own), about twice as
fast as LDAP adds. Reads a JSON document from stdin:
  {"users": [{"dn": ..., "sAMAccountName": ..., "attributes": {...}}], "groups": [{"dn": ..., "sAMAccountName": ..., "members": [DN, ...]}]}
Users are added disabled (userAccountControl 514) with their optional attributes (a `manager` must name a user
listed before), then the groups, each with all its members in one add; one transaction per 1,000 entries.
Used by the tests (test/support/samba.ts) and the AD import bench (bench/ldap/adImport.js).

Usage: samLoad.py <smb.conf> < spec.json
"""
import json
import sys
from samba.auth import system_session
from samba.param import LoadParm
from samba.samdb import SamDB


def main():
    spec = json.load(sys.stdin)
    lp = LoadParm()
    lp.load(sys.argv[1])
    db = SamDB(url=lp.samdb_url(), session_info=system_session(), lp=lp)
    entries = []
    for u in spec.get('users', []):
        msg = {'dn': u['dn'], 'objectClass': ['top', 'person', 'organizationalPerson', 'user'],
               'sAMAccountName': u['sAMAccountName'], 'userAccountControl': '514'}
        msg.update(u.get('attributes') or {})
        entries.append(msg)
    for g in spec.get('groups', []):
        msg = {'dn': g['dn'], 'objectClass': ['top', 'group'], 'sAMAccountName': g['sAMAccountName']}
        if g.get('members'):
            msg['member'] = g['members']
        entries.append(msg)
    db.transaction_start()
    try:
        for i, msg in enumerate(entries):
            db.add(msg)
            if (i + 1) % 1000 == 0:
                db.transaction_commit()
                db.transaction_start()
        db.transaction_commit()
    except Exception:
        db.transaction_cancel()
        raise


if __name__ == '__main__':
    main()
