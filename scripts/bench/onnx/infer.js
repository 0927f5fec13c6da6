// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// infer.js MODEL [N=21] - ONNX Runtime (npm onnxruntime-node, from
// NODE_PATH) on MODEL: phases load, infer (N iterations), release, end,
// marked through memwatch's control socket (include/memwatch_mark.js: no
// fork).  Right before each iteration's mark it reads its own
// /proc/self/stat; at the end it prints, as JSON on stdout, minflt+majflt at
// each mark and each inference's time (ms).  MW_ONNX_TRIM=FILE (with
// trim.c preloaded): after the last mark it writes "trim" to FILE and waits
// until trim.c's thread has called malloc_trim(0) and written "done", and
// adds the RSS that gave back (smaps_rollup) as trim_gave_bytes.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');
const socketMark = require(path.join(__dirname, '..', '..', '..', 'include', 'memwatch_mark'));
const { execFileSync } = require('child_process');
// MW_MARK_EXEC=PATH: mark by running PATH mark (a fork of this process), as
// issue 26's script did; else through the control socket.
const exe = process.env.MW_MARK_EXEC;
const mark = exe ? {
	phase: async (n) => { execFileSync(exe, ['mark', n]); return true; },
	iteration: async () => { execFileSync(exe, ['mark', '--iter']); return true; },
} : socketMark;

// minflt + majflt of a /proc/self/stat read: the read is all that runs
// before a mark, the parsing comes after the loop.
function faults(t) {
	const f = t.slice(t.lastIndexOf(')') + 2).split(' ');
	return Number(f[7]) + Number(f[9]);
}
const stat = () => fs.readFileSync('/proc/self/stat', 'latin1');

(async () => {
	const n = Number(process.argv[3] || 21), seen = [], ms = [];
	await mark.phase('load');
	let s = await ort.InferenceSession.create(process.argv[2], { intraOpNumThreads: 2 });
	const input = new ort.Tensor('float32', new Float32Array(3 * 224 * 224).fill(0.5), [1, 3, 224, 224]);
	await mark.phase('infer');
	for (let i = 0; i < n; i++) {
		seen.push(stat());
		await mark.iteration();
		const t0 = process.hrtime.bigint();
		await s.run({ input });
		ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
	}
	seen.push(stat());
	await mark.phase('release');
	await s.release();
	s = null;
	await mark.phase('end');
	const out = { faults: seen.map(faults), ms };
	const trim = process.env.MW_ONNX_TRIM;
	if (trim) {
		const rss = () => Number(/\nRss:\s+(\d+)/.exec(fs.readFileSync('/proc/self/smaps_rollup', 'latin1'))[1]) * 1024;
		const before = rss();
		fs.writeFileSync(trim, 'trim');
		while (fs.readFileSync(trim, 'latin1') !== 'done')
			await new Promise((r) => setTimeout(r, 10));
		out.trim_gave_bytes = before - rss();
	}
	console.log(JSON.stringify(out));
})();
