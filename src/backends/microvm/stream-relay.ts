/**
 * The one byte relay of the microVM tier's host side, a perl script (perl-base is Essential on
 * Debian, so every host here has it; a relay per connection must start in milliseconds and cost
 * little). Two ways in, one join loop:
 *
 * - `perl relay.pl PEER`: stdin/stdout joined to PEER. QEMU's `guestfwd=…-cmd:` hands each guest
 *   connection to a new relay this way (`guest-egress.ts`); stderr is silenced, so nothing of the
 *   host reaches the guest.
 * - `perl relay.pl --listen-fd3 PEER`: accepts on the listening socket it inherits as descriptor
 *   3 and joins each connection to a new connection to PEER, one child process each. The socket
 *   keeps the namespace it was made in and PEER is dialled in the relay's own, which is how the
 *   host reaches a VMM in a network namespace of its own (`guest-open-network.ts`).
 *
 * PEER is `unix:PATH` or `tcp:HOST:PORT`. Each end's EOF is passed on as a half-close, so a slow
 * reader still gets the tail; a connection with one direction ended and no bytes the other way for
 * `RELAY_LINGER_SECONDS` is done.
 */
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'

/** The relay's interpreter: perl-base is Essential on Debian, so every host here has it. */
export const RELAY_PERL = '/usr/bin/perl'
const RELAY_LINGER_SECONDS = 30
const RELAY_FILE_NAME = 'stream-relay.pl'

export const STREAM_RELAY_SCRIPT = `use strict;
use warnings;
use IO::Select;
use IO::Socket::INET;
use IO::Socket::UNIX;
use Socket qw(SOCK_STREAM SHUT_WR);

sub dial {
	my ($peer) = @_;
	return IO::Socket::UNIX->new(Type => SOCK_STREAM, Peer => $1) if $peer =~ /^unix:(.+)$/s;
	return IO::Socket::INET->new(PeerAddr => $1, PeerPort => $2, Proto => 'tcp')
		if $peer =~ /^tcp:([^:]+):(\\d+)$/;
	return undef;
}

sub join_streams {
	my ($in, $out, $peer) = @_;
	my %to = (fileno($in) => [$in, $peer], fileno($peer) => [$peer, $out]);
	my $select = IO::Select->new($in, $peer);
	my $linger;
	while ($select->count) {
		my @ready = $select->can_read($linger);
		return unless @ready;
		for my $from (@ready) {
			my ($source, $sink) = @{ $to{fileno($from)} };
			my $read = sysread($source, my $buffer, 65536);
			if (!$read) {
				$select->remove($source);
				shutdown($sink, SHUT_WR);
				$linger = ${RELAY_LINGER_SECONDS};
				next;
			}
			my $done = 0;
			while ($done < $read) {
				my $wrote = syswrite($sink, $buffer, $read - $done, $done);
				return unless $wrote;
				$done += $wrote;
			}
		}
	}
}

if ($ARGV[0] eq '--listen-fd3') {
	my $target = $ARGV[1];
	my $listener = IO::Socket::INET->new_from_fd(3, 'r') or exit 1;
	$listener->blocking(1);
	$SIG{CHLD} = 'IGNORE';
	for (;;) {
		my $client = $listener->accept;
		if (!$client) {
			next if $!{EINTR} || $!{ECONNABORTED};
			exit 1;
		}
		my $pid = fork;
		if (defined $pid && $pid == 0) {
			close($listener);
			my $peer = dial($target) or exit 1;
			join_streams($client, $client, $peer);
			exit 0;
		}
		close($client);
	}
}
open(STDERR, '>', '/dev/null');
my $peer = dial($ARGV[0]) or exit 1;
join_streams(\\*STDIN, \\*STDOUT, $peer);
`

/** Writes the relay into `dir` (the guest's private directory); returns its path. */
export async function writeStreamRelay(dir: string): Promise<string> {
	const path = join(dir, RELAY_FILE_NAME)
	await writeFile(path, STREAM_RELAY_SCRIPT, { mode: 0o500 })
	return path
}
