// An independent IPFS client reads hearth's trustless gateway: @helia/verified-fetch, with the
// service as its only gateway and no other router, fetches a block by CID (it checks the bytes against
// the CID itself), and @ipld/car reads the gateway's CAR of the same block.
// Usage: node verified_fetch.mjs GATEWAY_URL CID. Prints one JSON object.
// Node 20 (the machine's) lacks Promise.withResolvers (Node 22), which the libp2p stack calls;
// it is defined here, as specified, before the packages load (hence the dynamic imports).
if (typeof Promise.withResolvers !== 'function') {
  Promise.withResolvers = function withResolvers () {
    let resolve, reject
    const promise = new Promise((res, rej) => { resolve = res; reject = rej })
    return { promise, resolve, reject }
  }
}
const { createVerifiedFetch } = await import('@helia/verified-fetch')
const { withHTTP } = await import('@helia/http')
const { createHeliaLight } = await import('helia')
const { fallbackRouter } = await import('@helia/fallback-router')
const { CarReader } = await import('@ipld/car')

const [gateway, cid] = process.argv.slice(2)
const out = {}
// Helia over HTTP only, as createVerifiedFetch({gateways}) builds it but without libp2p, whose
// router would look for peers until the request times out before the gateway is asked. The
// service is the one router's one provider: helia asks fallback routers only after the others
// end, and with no other router that search never ends.
const gateways = fallbackRouter({ gateways: [gateway], shuffle: false })
const helia = withHTTP(createHeliaLight(), {
  delegatedRouters: [],
  recursiveGateways: [],
  allowLocal: true, // loopback, as in any test
  allowInsecure: true // plain http
})
helia.addRouter({
  name: 'hearth-gateway',
  findProviders: (cid, options) => gateways.findProviders(cid, options),
  toString: () => `hearth-gateway(${gateway})`
})
await helia.start()
const verifiedFetch = await createVerifiedFetch(helia)
try {
  const response = await verifiedFetch(`ipfs://${cid}`, { signal: AbortSignal.timeout(20000) })
  out.status = response.status
  out.content_type = response.headers.get('content-type')
  out.hex = Buffer.from(await response.arrayBuffer()).toString('hex')
} finally {
  await verifiedFetch.stop()
  await helia.stop()
}
const car = await fetch(`${gateway}/ipfs/${cid}?format=car`)
const reader = await CarReader.fromBytes(new Uint8Array(await car.arrayBuffer()))
out.car_version = reader.version
out.car_roots = (await reader.getRoots()).map(String)
out.car_blocks = []
for await (const block of reader.blocks()) {
  out.car_blocks.push({ cid: block.cid.toString(), hex: Buffer.from(block.bytes).toString('hex') })
}
console.log(JSON.stringify(out))
