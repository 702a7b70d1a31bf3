// grpc-js xDS client driver for xdsconform --client-cmd:
//   node driver.js TARGET CSDS_ADDR   (bootstrap in $GRPC_XDS_BOOTSTRAP)
const grpc = require('@grpc/grpc-js');
require('@grpc/grpc-js-xds').register();
const [target, csds] = process.argv.slice(2);
const admin = new grpc.Server();
grpc.addAdminServicesToServer(admin);
admin.bindAsync(csds, grpc.ServerCredentials.createInsecure(), (err) => {
  if (err) { console.error(err); process.exit(1); }
  const client = new grpc.Client(target, grpc.credentials.createInsecure());
  client.getChannel().getConnectivityState(true); // leave idle: start the xDS resolver
});
process.on('SIGTERM', () => process.exit(0));
