export { ajv, defineSchema, validate, registeredSchemas, schemaById, toFieldErrors } from '../validation/ajv';
export { Guid, Timestamp, DisplayName, AttributeName, Nullable, Dictionary, ProblemDetailsSchema } from '../validation/schemas';
