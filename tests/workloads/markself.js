// SPDX-License-Identifier: GPL-2.0
// markself.js - a Node program that marks itself through memwatch's control
// socket (include/memwatch_mark.js): phase "load" allocates and fills
// 64 MiB, phase "infer" runs 5 iterations, phase "done" drops the buffer.
// Right before each phase mark it reads its own VmSize and VmRSS, and at
// the end writes them to $MW_CKPT_DIR/marks, a line "NAME VMSIZE VMRSS"
// (bytes) each.  Every mark must be answered "ok": exit status 3 if not.
'use strict';
const fs = require('fs');
const path = require('path');
const mark = require(path.join(__dirname, '..', '..', 'include', 'memwatch_mark'));

const seen = [];

function phase(name) {
	const st = {};
	for (const line of fs.readFileSync('/proc/self/status', 'utf8').split('\n')) {
		const m = /^(VmSize|VmRSS):\s+(\d+) kB/.exec(line);
		if (m)
			st[m[1]] = Number(m[2]) * 1024;
	}
	seen.push(`${name} ${st.VmSize} ${st.VmRSS}\n`);
	return mark.phase(name);
}

(async () => {
	let ok = await phase('load');
	let model = Buffer.alloc(64 << 20, 1);
	ok = (await phase('infer')) && ok;
	for (let i = 0; i < 5; i++) {
		ok = (await mark.iteration()) && ok;
		let s = 0;
		for (let j = 0; j < model.length; j += 65536)
			s += model[j];
	}
	ok = (await phase('done')) && ok;
	model = null;
	if (process.env.MW_CKPT_DIR)
		fs.writeFileSync(path.join(process.env.MW_CKPT_DIR, 'marks'), seen.join(''));
	process.exit(ok ? 0 : 3);
})();
