import { describeStoreConformance } from '../../support/conformance.js'
import { storeKinds, useStoreClients } from '../../support/stores.js'

describe('every kind of store', () => {
  useStoreClients()
  for (const kind of storeKinds) describeStoreConformance(kind.name, kind.make)
})
