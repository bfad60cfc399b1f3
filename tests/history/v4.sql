-- A version-4 history made by mtool 22b252e (before simulated runs were stored):
-- count -- loops 7 1000, count -- loops 50 20000, time --inner-first of the
-- second, tests/history/loops.c built with cc -g -O2.  sqlite3 .dump, then the
-- two header fields .dump leaves out.  tests/history.sh migrates it to version 5.
PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE programs(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  path TEXT NOT NULL,
  build_id TEXT,
  sha256 TEXT NOT NULL UNIQUE,
  first_stored REAL NOT NULL);
INSERT INTO programs VALUES(1,'loops','/tmp/le4/loops','c72b6e9b3c875e7564d6ab33d3b06355bb780bcb','66bcbdb9093c73f27a5ca69d710720e1061e0fe33463c55175578a493a6d4901',1795727211.0);
CREATE TABLE sites(
  id INTEGER PRIMARY KEY,
  program_id INTEGER NOT NULL REFERENCES programs(id),
  object_id INTEGER NOT NULL REFERENCES objects(id),
  procedure TEXT NOT NULL,
  named INTEGER NOT NULL,
  loop_path TEXT,
  depth INTEGER NOT NULL,
  file TEXT,
  line INTEGER NOT NULL,
  proc_line INTEGER NOT NULL,
  address INTEGER NOT NULL,
  shape INTEGER NOT NULL,
  matched TEXT NOT NULL,
  UNIQUE(program_id, address, loop_path));
INSERT INTO sites VALUES(1,1,1,'_init',1,NULL,0,NULL,0,0,4096,9043915448228733734,'new');
INSERT INTO sites VALUES(2,1,2,'main',1,NULL,0,'/tmp/le4/loops.c',16,16,4176,3450245427235751433,'new');
INSERT INTO sites VALUES(3,1,3,'_start',1,NULL,0,NULL,0,0,4288,5260938020824654795,'new');
INSERT INTO sites VALUES(4,1,4,'deregister_tm_clones',1,NULL,0,NULL,0,0,4336,899788099957195372,'new');
INSERT INTO sites VALUES(5,1,5,'register_tm_clones',1,NULL,0,NULL,0,0,4384,-8331704458292827797,'new');
INSERT INTO sites VALUES(6,1,6,'__do_global_dtors_aux',1,NULL,0,NULL,0,0,4448,-3305826053987384409,'new');
INSERT INTO sites VALUES(7,1,7,'frame_dummy',1,NULL,0,NULL,0,0,4512,67932597949331911,'new');
INSERT INTO sites VALUES(8,1,8,'work',1,NULL,0,'/tmp/le4/loops.c',10,10,4528,2074458412282721360,'new');
INSERT INTO sites VALUES(9,1,9,'work',1,'1',1,'/tmp/le4/loops.c',11,10,4544,-9060663889725807158,'new');
INSERT INTO sites VALUES(10,1,10,'work',1,'1.1',2,'/tmp/le4/loops.c',12,10,4552,-3558923321288340050,'new');
INSERT INTO sites VALUES(11,1,11,'_fini',1,NULL,0,NULL,0,0,4596,2468059094760825767,'new');
CREATE TABLE runs(
  id INTEGER PRIMARY KEY,
  program_id INTEGER NOT NULL REFERENCES programs(id),
  tool TEXT NOT NULL,
  finished REAL NOT NULL,
  command_line TEXT NOT NULL,
  arguments TEXT NOT NULL,
  cwd TEXT NOT NULL,
  machine TEXT NOT NULL,
  mtool_version TEXT NOT NULL,
  ran INTEGER NOT NULL,
  exit_status INTEGER,
  user_s REAL, sys_s REAL, wall_s REAL,
  base_user_s REAL, base_sys_s REAL, base_wall_s REAL,
  memory_ops INTEGER NOT NULL,
  instructions INTEGER NOT NULL,
  nobjects INTEGER NOT NULL);
INSERT INTO runs VALUES(1,1,'count',1795727211.0,'mtool count -o r1 -- ./loops 7 1000','["7","1000"]','/tmp/le4','vm, Intel(R) Xeon(R) Processor, 2 cpus, Linux 6.18.44-fc-v657','0.1.0',1,0,0.0014849999999999999918,0.0,0.0018551519970060326159,0.0011360000000000000739,0.0,0.0014971810014685615897,14034,56126,11);
INSERT INTO runs VALUES(2,1,'count',1795727217.0,'mtool count -o r2 -- ./loops 50 20000','["50","20000"]','/tmp/le4','vm, Intel(R) Xeon(R) Processor, 2 cpus, Linux 6.18.44-fc-v657','0.1.0',1,0,0.004074000000000000364,0.0,0.03066515100363176316,0.0036960000000000000665,0.0,0.014412985001399647444,2000034,8000341,11);
INSERT INTO runs VALUES(3,1,'time',1795727222.0,'mtool time --inner-first r2','["50","20000"]','/tmp/le4','vm, Intel(R) Xeon(R) Processor, 2 cpus, Linux 6.18.44-fc-v657','0.1.0',1,0,0.0038330000000000000355,0.0,0.010032254998805001378,0.0036960000000000000665,0.0,0.014413000000000000463,0,0,2);
CREATE TABLE IF NOT EXISTS "objects"(
  id INTEGER PRIMARY KEY,
  program_name TEXT NOT NULL,
  kind TEXT NOT NULL CHECK(kind IN ('procedure', 'loop', 'region')));
INSERT INTO objects VALUES(1,'loops','procedure');
INSERT INTO objects VALUES(2,'loops','procedure');
INSERT INTO objects VALUES(3,'loops','procedure');
INSERT INTO objects VALUES(4,'loops','procedure');
INSERT INTO objects VALUES(5,'loops','procedure');
INSERT INTO objects VALUES(6,'loops','procedure');
INSERT INTO objects VALUES(7,'loops','procedure');
INSERT INTO objects VALUES(8,'loops','procedure');
INSERT INTO objects VALUES(9,'loops','loop');
INSERT INTO objects VALUES(10,'loops','loop');
INSERT INTO objects VALUES(11,'loops','procedure');
CREATE TABLE IF NOT EXISTS "figures"(
  run_block INTEGER NOT NULL,
  object_id INTEGER NOT NULL REFERENCES objects(id),
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  site_id INTEGER NOT NULL REFERENCES sites(id),
  entries INTEGER,
  iterations INTEGER,
  instructions INTEGER NOT NULL,
  memory_ops INTEGER NOT NULL,
  measured_cycles REAL,
  predicted_cycles REAL,
  overhead_cycles REAL,
  CHECK(run_block = run_id >> 5),
  PRIMARY KEY(run_block, object_id, run_id, site_id)) WITHOUT ROWID;
INSERT INTO figures VALUES(0,1,1,1,1,NULL,6,2,NULL,NULL,NULL);
INSERT INTO figures VALUES(0,1,2,1,1,NULL,6,2,NULL,NULL,NULL);
INSERT INTO figures VALUES(0,2,1,2,1,NULL,34,14,NULL,NULL,NULL);
INSERT INTO figures VALUES(0,2,2,2,1,NULL,34,14,NULL,NULL,NULL);
INSERT INTO figures VALUES(0,3,1,3,1,NULL,11,5,NULL,NULL,NULL);
INSERT INTO figures VALUES(0,3,2,3,1,NULL,11,5,NULL,NULL,NULL);
INSERT INTO figures VALUES(0,4,1,4,1,NULL,5,1,NULL,NULL,NULL);
INSERT INTO figures VALUES(0,4,2,4,1,NULL,5,1,NULL,NULL,NULL);
INSERT INTO figures VALUES(0,5,1,5,1,NULL,10,1,NULL,NULL,NULL);
INSERT INTO figures VALUES(0,5,2,5,1,NULL,10,1,NULL,NULL,NULL);
INSERT INTO figures VALUES(0,6,1,6,1,NULL,13,9,NULL,NULL,NULL);
INSERT INTO figures VALUES(0,6,2,6,1,NULL,13,9,NULL,NULL,NULL);
INSERT INTO figures VALUES(0,7,1,7,1,NULL,2,0,NULL,NULL,NULL);
INSERT INTO figures VALUES(0,7,2,7,1,NULL,2,0,NULL,NULL,NULL);
INSERT INTO figures VALUES(0,8,1,8,1,NULL,56042,14001,NULL,NULL,NULL);
INSERT INTO figures VALUES(0,8,2,8,1,NULL,8000257,2000001,NULL,NULL,NULL);
INSERT INTO figures VALUES(0,9,1,9,1,7,56035,14000,NULL,NULL,NULL);
INSERT INTO figures VALUES(0,9,2,9,1,50,8000250,2000000,NULL,NULL,NULL);
INSERT INTO figures VALUES(0,9,3,9,1,50,8000250,2000000,7435359.306102915667,2282286.2068965518846,5153073.0992063637821);
INSERT INTO figures VALUES(0,10,1,10,7,7000,56000,14000,NULL,NULL,NULL);
INSERT INTO figures VALUES(0,10,2,10,50,1000000,8000000,2000000,NULL,NULL,NULL);
INSERT INTO figures VALUES(0,10,3,10,50,1000000,8000000,2000000,7429902.751933887601,2282200.0,5147702.7519338876011);
INSERT INTO figures VALUES(0,11,1,11,1,NULL,3,1,NULL,NULL,NULL);
INSERT INTO figures VALUES(0,11,2,11,1,NULL,3,1,NULL,NULL,NULL);
CREATE INDEX programs_by_name ON programs(name, id);
CREATE INDEX sites_by_object ON sites(object_id, program_id);
CREATE INDEX sites_by_name ON sites(procedure, loop_path);
CREATE INDEX runs_by_program ON runs(program_id, id);
CREATE INDEX runs_by_time ON runs(finished);
CREATE INDEX figures_by_run ON figures(run_id, site_id);
COMMIT;
PRAGMA application_id = 1836347240;
PRAGMA user_version = 4;
