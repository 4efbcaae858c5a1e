import { isFleetlimitError, OptionError } from '@fleetlimit/core'
import { expect } from 'chai'

/** The coded OptionError (ERR_FLEETLIMIT_OPTION) that `build` throws; the test fails if it throws anything else. */
export function optionErrorOf(build: () => unknown): OptionError {
  let thrown: unknown
  try {
    build()
  } catch (error) {
    thrown = error
  }
  return coded(thrown)
}

/** The same, for a `build` that may also reject (an adapter that checks its options at registration). */
export async function optionErrorOfAsync(build: () => unknown): Promise<OptionError> {
  let thrown: unknown
  try {
    await build()
  } catch (error) {
    thrown = error
  }
  return coded(thrown)
}

function coded(thrown: unknown): OptionError {
  expect(isFleetlimitError(thrown, 'ERR_FLEETLIMIT_OPTION'), String(thrown)).to.equal(true)
  expect(thrown).to.be.instanceOf(OptionError)
  return thrown as OptionError
}
