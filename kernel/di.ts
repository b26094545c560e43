/**
 * The DI decorators, with the reflect polyfill tsyringe needs loaded first. Services import
 * `inject`/`injectable` from here, never from tsyringe directly, so the order is always right.
 */
import 'reflect-metadata';
export { inject, injectable } from 'tsyringe';
