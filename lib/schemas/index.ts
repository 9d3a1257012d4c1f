export { ajv, defineSchema, validate, registeredSchemas, schemaById, toFieldErrors } from '../core/validation/ajv';
export { Guid, Timestamp, DisplayName, AttributeName, Nullable, Dictionary, ProblemDetailsSchema } from '../core/validation/schemas';
