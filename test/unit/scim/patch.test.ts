import { ScimError } from '../../../lib/scim/errors';
import { applyPatch } from '../../../lib/scim/patch';
import { normalizeResource, parseProjection, project } from '../../../lib/scim/resource';
import { ENTERPRISE_USER, PATCH_OP, RESOURCE_TYPES } from '../../../lib/scim/schema';

const User = RESOURCE_TYPES.User;
const Group = RESOURCE_TYPES.Group;
const patch = (doc: Record<string, unknown>, ...Operations: unknown[]) => applyPatch(User, doc, { schemas: [PATCH_OP], Operations });

describe('normalizeResource', () => {
  it('canonical names, "True" strings, bare ids for complex values, unknown attributes dropped', () => {
    const out = normalizeResource(User, {
      UserName: 'ada',
      Active: 'True',
      emails: [{ Primary: 'false', Value: 'a@x', Type: 'work' }],
      adreses: [{ country: 'Germany' }],
      meta: { created: 'x' },
      id: 'spoofed',
      groups: [{ value: 'g' }],
      [ENTERPRISE_USER.toLowerCase()]: { Manager: 'boss-id', Department: 'R&D' },
      'urn:ietf:params:scim:schemas:extension:csv:1.0:User': { HireDate: '2024' },
    });
    expect(out).toEqual({
      userName: 'ada',
      active: true,
      emails: [{ primary: false, value: 'a@x', type: 'work' }],
      [ENTERPRISE_USER]: { manager: { value: 'boss-id' }, department: 'R&D' },
      'urn:ietf:params:scim:schemas:extension:csv:1.0:User': { HireDate: '2024' },
    });
  });

  it('a missing userName or a boolean that is not one is 400', () => {
    expect(() => normalizeResource(User, { displayName: 'x' })).toThrow(ScimError);
    expect(() => normalizeResource(User, { userName: 'x', active: 'maybe' })).toThrow(ScimError);
    expect(() => normalizeResource(Group, { members: [] })).toThrow(ScimError);
  });
});

describe('applyPatch', () => {
  const base = { userName: 'ada', emails: [{ type: 'work', value: 'a@work' }], name: { givenName: 'Ada', familyName: 'L' } };

  it('op in any case; replace with and without a path; dotted and URN keys in a path-less value', () => {
    const out = patch(
      base,
      { op: 'Replace', path: 'userName', value: 'ada2' },
      { op: 'REPLACE', value: { 'name.givenName': 'Augusta', active: 'False', [`${ENTERPRISE_USER}:department`]: 'Math' } },
      { op: 'Add', value: { [ENTERPRISE_USER]: { employeeNumber: 42 } } },
    );
    expect(out).toEqual({
      userName: 'ada2',
      active: false,
      emails: [{ type: 'work', value: 'a@work' }],
      name: { givenName: 'Augusta', familyName: 'L' },
      [ENTERPRISE_USER]: { department: 'Math', employeeNumber: '42' },
    });
  });

  it('filtered paths: replace a sub-attribute, create the element when none matches, remove by filter', () => {
    let out = patch(base, { op: 'replace', path: 'emails[type eq "work"].value', value: 'new@work' });
    expect(out.emails).toEqual([{ type: 'work', value: 'new@work' }]);
    out = patch(out, { op: 'replace', path: 'emails[type eq "home"].value', value: 'me@home' });
    expect(out.emails).toEqual([
      { type: 'work', value: 'new@work' },
      { type: 'home', value: 'me@home' },
    ]);
    out = patch(out, { op: 'remove', path: 'emails[type eq "work"]' });
    expect(out.emails).toEqual([{ type: 'home', value: 'me@home' }]);
  });

  it('a manager as a bare id, removed again; removing a required attribute is refused', () => {
    const out = patch(base, { op: 'add', path: `${ENTERPRISE_USER}:manager`, value: 'boss' });
    expect(out[ENTERPRISE_USER]).toEqual({ manager: { value: 'boss' } });
    expect(patch(out, { op: 'remove', path: `${ENTERPRISE_USER}:manager` })[ENTERPRISE_USER]).toBeUndefined();
    expect(() => patch(base, { op: 'remove', path: 'userName' })).toThrow(ScimError);
    expect(() => patch(base, { op: 'move', path: 'userName' })).toThrow(ScimError);
    expect(() => applyPatch(User, base, { schemas: [PATCH_OP] })).toThrow(ScimError);
  });

  it('group members: add objects or bare ids without duplicates, remove by filter, by list, or all', () => {
    const g = { displayName: 'G', members: [{ value: 'u1' }] };
    const gp = (doc: Record<string, unknown>, ...Operations: unknown[]) => applyPatch(Group, doc, { schemas: [PATCH_OP], Operations });
    let out = gp(g, { op: 'add', path: 'members', value: [{ value: 'u2', displayName: 'Two' }, { value: 'U1' }] }, { op: 'add', path: 'members', value: 'u3' });
    expect(out.members).toEqual([{ value: 'U1' }, { value: 'u2', display: 'Two' }, { value: 'u3' }]);
    out = gp(out, { op: 'remove', path: 'members[value eq "u2"]' });
    expect(out.members).toEqual([{ value: 'U1' }, { value: 'u3' }]);
    out = gp(out, { op: 'remove', path: 'members', value: [{ value: 'u3' }] });
    expect(out.members).toEqual([{ value: 'U1' }]);
    expect(gp(out, { op: 'remove', path: 'members' }).members).toBeUndefined();
  });
});

describe('attributes and excludedAttributes', () => {
  const rep = { schemas: ['s'], id: '1', userName: 'a', emails: [{ type: 'work', value: 'x' }], name: { givenName: 'g', familyName: 'f' } };
  it('keeps id and schemas, reads filters in items as the attribute, sub-attributes by path', () => {
    expect(project(rep, parseProjection(User, 'userName,emails[type eq "work"]', null))).toEqual({
      schemas: ['s'],
      id: '1',
      userName: 'a',
      emails: rep.emails,
    });
    expect(project(rep, parseProjection(User, 'name.givenName', null))).toEqual({ schemas: ['s'], id: '1', name: { givenName: 'g' } });
    expect(project(rep, parseProjection(User, null, 'emails,id'))).toEqual({ schemas: ['s'], id: '1', userName: 'a', name: rep.name });
  });
});
