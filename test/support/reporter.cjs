// The spec reporter, plus one plain closing line ("mocha: N passed, N failed") that CI reads.
const Mocha = require('mocha')

class Reporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options)
    runner.once(Mocha.Runner.constants.EVENT_RUN_END, () => {
      const { passes, failures, pending } = this.stats
      console.log(`mocha: ${passes} passed, ${failures} failed${pending ? `, ${pending} skipped` : ''}`)
    })
  }
}

module.exports = Reporter
