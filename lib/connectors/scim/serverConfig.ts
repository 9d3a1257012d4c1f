import type { Json } from './attributes';

/**
 * What a SCIM server says it supports (`GET /ServiceProviderConfig`, RFC 7643 5), as the connector uses it:
 * PATCH (else updates are PUT), Bulk and its `maxOperations`, filters (else a delta import cannot ask for what
 * changed), ETags (then a read-modify-write sends `If-Match`).
 */
export interface ServerFeatures {
  patch: boolean;
  bulk: { supported: boolean; maxOperations: number };
  filter: boolean;
  etag: boolean;
}

/** A server that does not publish its configuration: the RFC's mandatory features only. */
export const UNPUBLISHED: ServerFeatures = { patch: true, bulk: { supported: false, maxOperations: 0 }, filter: true, etag: false };

const supported = (v: unknown): boolean => {
  const s = (v as Json | undefined)?.supported;
  return s === true || (typeof s === 'string' && s.toLowerCase() === 'true');
};

export function serverFeatures(body: unknown): ServerFeatures {
  const b = (body && typeof body === 'object' ? body : {}) as Json;
  const bulk = (b.bulk ?? {}) as Json;
  const max = Number(bulk.maxOperations);
  return {
    patch: supported(b.patch),
    bulk: { supported: supported(bulk) && Number.isInteger(max) && max > 0, maxOperations: Number.isInteger(max) && max > 0 ? max : 0 },
    filter: supported(b.filter),
    etag: supported(b.etag),
  };
}

export function describeFeatures(f: ServerFeatures): string {
  const yes = (v: boolean) => (v ? 'yes' : 'no');
  return `PATCH ${yes(f.patch)}, Bulk ${f.bulk.supported ? `yes (at most ${f.bulk.maxOperations} operations)` : 'no'}, filter ${yes(f.filter)}, ETag ${yes(f.etag)}`;
}
