// The older majors, installed under aliases so one run tests both: typed as the current ones.
declare module 'express4' {
  import express from 'express'
  export default express
}
declare module 'koa2' {
  import Koa from 'koa'
  export default Koa
}
