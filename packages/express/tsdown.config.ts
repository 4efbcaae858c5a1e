export { default } from '../../tsdown.base.ts'
