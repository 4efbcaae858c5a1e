// The lowest versions of the framework peer ranges, installed under aliases (root package.json): typed as the
// workspace's versions, whose types are the ones consumers use (Express and Koa ship none of their own).
declare module 'express-lowest' {
  import express from 'express'
  export default express
}
declare module 'express4-lowest' {
  import express from 'express'
  export default express
}
declare module 'koa-lowest' {
  import Koa from 'koa'
  export default Koa
}
declare module 'koa2-lowest' {
  import Koa from 'koa'
  export default Koa
}
