#!/usr/bin/env python3
"""Bulk-load users into a running Samba AD DC through Samba's own code (bench/ldap/adImport.js).

Opens the DC's sam.ldb directly with the system session, as samba-tool does, so every entry goes through the
DC's full module stack: objectGUID, objectSid (from the DC's RID pool), uSNCreated/uSNChanged, the linked
`manager` attribute and the defaults of the user class are Samba's own. Commits every 1,000 adds.

Usage: adLoad.py <smb.conf> <parent DN> <count>
User i: CN=u<i:06>,<parent>; sAMAccountName u<i:06>; manager = user floor(i/10) (none for user 0).
"""
import sys
import time
from samba.auth import system_session
from samba.param import LoadParm
from samba.samdb import SamDB


def main():
    conf, parent, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    lp = LoadParm()
    lp.load(conf)
    db = SamDB(url=lp.samdb_url(), session_info=system_session(), lp=lp)
    realm = lp.get('realm').lower()

    def dn(i):
        return 'CN=u%06d,%s' % (i, parent)

    t0 = time.time()
    db.transaction_start()
    try:
        for i in range(count):
            sam = 'u%06d' % i
            msg = {
                'dn': dn(i),
                'objectClass': ['top', 'person', 'organizationalPerson', 'user'],
                'sAMAccountName': sam,
                'userPrincipalName': '%s@%s' % (sam, realm),
                'givenName': 'Given%d' % i,
                'sn': 'Surname%d' % i,
                'displayName': 'Given%d Surname%d' % (i, i),
                'mail': '%s@%s' % (sam, realm),
                'title': 'Title %d' % (i % 50),
                'department': 'Department %d' % (i % 20),
                'employeeID': 'E%06d' % i,
                'telephoneNumber': '+1 555 %07d' % i,
                'userAccountControl': '514',
            }
            if i > 0:
                msg['manager'] = dn(i // 10)
            db.add(msg)
            if (i + 1) % 1000 == 0:
                db.transaction_commit()
                if (i + 1) % 5000 == 0:
                    print('%d users in %.1f s' % (i + 1, time.time() - t0), file=sys.stderr, flush=True)
                db.transaction_start()
        db.transaction_commit()
    except Exception:
        db.transaction_cancel()
        raise


if __name__ == '__main__':
    main()
