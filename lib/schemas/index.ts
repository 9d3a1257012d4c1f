export { ajv, defineSchema, validate, registeredSchemas, schemaById, toFieldErrors } from './ajv';
export { Guid, Timestamp, DisplayName, AttributeName, Nullable, Dictionary, ProblemDetailsSchema } from './common';
