import { describeStoreConformance } from '../../support/conformance.js'
import { closeStoreClients, storeKinds } from '../../support/stores.js'

for (const kind of storeKinds) describeStoreConformance(kind.name, kind.make, closeStoreClients)
