export { ajv, defineSchema, validate, registeredSchemas, schemaById, toFieldErrors } from './ajv';
export { Guid, Timestamp, DisplayName, AttributeName, Nullable, ProblemDetailsSchema } from './common';
