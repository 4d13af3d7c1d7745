# SPDX-License-Identifier: Apache-2.0
package SL::Docs;

# The ```apache blocks of README.md and docs/*.md, as an operator would
# paste them. A block whose first line is "# fragment: WHERE" is
# deliberately not a whole configuration (WHERE says what it goes inside:
# "inside <VirtualHost>", "inside <Location>"): the tests wrap it there.
# A block whose first line is "# template: ..." holds variables its
# program fills in (docs/BENCHMARKS.md's rows, written by bench/report.sh):
# no configuration to paste, and no test runs it ({template} set).
# Paths under /etc/apache2/ are the operator's files: files() makes each
# one in a directory of the test's and paste() writes the block with
# them.
#
#   my @b = SL::Docs::blocks($top);      # { file, line, title, text, fragment }
#   my ($b) = grep { $_->{title} eq 'Floods' } @b;
#   my $conf = SL::Docs::paste($b, $dir, %content);

use strict;
use warnings;

sub blocks {
    my ($top) = @_;
    my @out;
    opendir my $dh, "$top/docs" or die "$top/docs: $!";
    my @files = ('README.md', map {"docs/$_"} sort grep {/\.md$/} readdir $dh);
    for my $f (@files) {
        open my $fh, '<', "$top/$f" or die "$top/$f: $!";
        my ($title, $in, $text, $start, $ind) = ('', 0, '', 0, '');
        while (my $l = <$fh>) {
            if (!$in && $l =~ /^#{2,4} (.*?)\s*$/) {
                $title = $1;
            }
            # A block in a list item is indented as the item's text.
            elsif (!$in && $l =~ /^( *)```apache\s*$/) {
                ($in, $text, $start, $ind) = (1, '', $., $1);
            }
            elsif ($in && $l =~ /^ *```\s*$/) {
                my ($frag) = $text =~ /\A# fragment: (.*)$/m;
                my ($tmpl) = $text =~ /\A# template: (.*)$/m;
                push @out, { file => $f, line => $start, title => $title,
                    text => $text, fragment => $frag, template => $tmpl };
                $in = 0;
            }
            elsif ($in) {
                $text .= $l =~ s/^\Q$ind\E//r;
            }
        }
    }
    return @out;
}

# The block with each /etc/apache2/NAME replaced by DIR/NAME, made with
# the content given for NAME (empty by default).
sub paste {
    my ($b, $dir, %content) = @_;
    my $text = $b->{text};
    for my $path ($text =~ m{/etc/apache2/([\w.-]+)}g) {
        open my $fh, '>', "$dir/$path" or die "$dir/$path: $!";
        print $fh $content{$path} // '';
        close $fh;
    }
    $text =~ s{/etc/apache2/([\w.-]+)}{$dir/$1}g;
    if (my $where = $b->{fragment}) {
        $text = $where =~ /<Location/ ? "<Location />\n$text</Location>\n"
              : $where =~ /<Directory/ ? "<Directory />\n$text</Directory>\n"
              : $text;
    }
    return $text;
}

1;
