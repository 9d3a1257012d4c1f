import { ERROR_SCHEMA } from './schema';

/** `scimType` values of RFC 7644 section 3.12 (and `tooMany` for Bulk). */
export type ScimType =
  'invalidFilter' | 'tooMany' | 'uniqueness' | 'mutability' | 'invalidSyntax' | 'invalidPath' | 'noTarget' | 'invalidValue' | 'invalidVers' | 'sensitive';

/** An error a SCIM client is shown as `{ schemas: [Error], status: "4xx", scimType, detail }`. */
export class ScimError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly scimType?: ScimType,
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
    this.name = 'ScimError';
  }

  body(): Record<string, unknown> {
    return { schemas: [ERROR_SCHEMA], status: String(this.status), ...(this.scimType ? { scimType: this.scimType } : {}), detail: this.detail };
  }
}

export const badRequest = (detail: string, scimType: ScimType = 'invalidValue') => new ScimError(400, detail, scimType);
export const notFound = (detail: string) => new ScimError(404, detail);
