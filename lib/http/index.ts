export {
  readJson,
  routeId,
  routeGuid,
  isGuid,
  parseQuery,
  page,
  PAGING,
  MAX_JSON_BODY_BYTES,
  type QuerySpec,
  type QueryParam,
  type ParsedQuery,
} from './request';
export { json, ok, created, accepted, noContent, apiPath, requestPath } from './response';
