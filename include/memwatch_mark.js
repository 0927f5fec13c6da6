// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Mark phases and iterations for memwatch from Node, without forking
// `memwatch mark` (execFileSync forks the whole process: every page it
// writes next is a copy-on-write fault).  Copy this file beside your program:
//
//     const mark = require('./memwatch_mark');
//     await mark.phase('load_model');
//     const session = await ort.InferenceSession.create('model.onnx');
//     for (const input of inputs) {
//         await mark.iteration();
//         await session.run(input);
//     }
//
// `memwatch -- CMD` gives CMD its session's control socket as
// MEMWATCH_CONTROL; without it each call resolves to false at once.  The
// protocol is in memwatch_mark.h beside this file: one line each way,
// answered once the marker is taken, so await the call.
'use strict';
const net = require('net');

const path = process.env.MEMWATCH_CONTROL;

function send(line) {
	return new Promise((resolve) => {
		if (!path)
			return resolve(false);
		let reply = '';
		const s = net.createConnection(path, () => s.write(line));
		s.on('data', (d) => { reply += d; });
		s.on('end', () => resolve(reply === 'ok\n'));
		s.on('error', () => resolve(false));
	});
}

// Start the phase `name` (1 to 63 printable characters).
exports.phase = (name) => send(`phase ${name}\n`);
// Start one iteration (a request, a batch, a step).
exports.iteration = () => send('iter\n');
