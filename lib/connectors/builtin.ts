/**
 * The connectors that ship with the service. Each module registers its definition with the registry when it
 * loads; the registry loads this module the first time an implementation is asked for, so neither the API nor
 * the engine has to remember to import a connector.
 */
import './ldap';
import './sql';
