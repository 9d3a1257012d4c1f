import { resolveRoles } from '../../../lib/auth/roles';

const configured = { Admin: ['Sync Admins', 'Service.Admin'], Operator: ['Service.Operator'], Viewer: ['Service.Viewer'] };

describe('resolveRoles (spec 5.3)', () => {
  it('matches exactly, case and whitespace included, over every claim value', () => {
    expect(resolveRoles(configured, { roleClaims: ['x', 'Service.Admin'] })).toEqual(['Admin']);
    expect(resolveRoles(configured, { roleClaims: ['service.admin', ' Sync Admins'] })).toEqual(['Viewer']);
    expect(resolveRoles(configured, { roleClaims: ['Service.Operator', 'Sync Admins', 'Service.Viewer'] })).toEqual(['Admin', 'Operator', 'Viewer']);
  });

  it('makes an authenticated caller with nothing mapped a Viewer', () => {
    expect(resolveRoles(configured, { roleClaims: [] })).toEqual(['Viewer']);
  });

  it('matches group ids only against an identical configured value', () => {
    const withGuid = { ...configured, Operator: ['6f1c8b52-0d0e-4b8e-9b1a-3c2d1e0f9a87'] };
    expect(resolveRoles(withGuid, { roleClaims: [], groupIds: ['6f1c8b52-0d0e-4b8e-9b1a-3c2d1e0f9a87'] })).toEqual(['Operator']);
    expect(resolveRoles(withGuid, { roleClaims: [], groupIds: ['6F1C8B52-0D0E-4B8E-9B1A-3C2D1E0F9A87'] })).toEqual(['Viewer']);
  });
});
